"""The coordinator's list of parties and their public keys."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from ._keys import PublicKey, key_algorithm, key_id, load_public_key
from ._parameters import check_party_id

__all__ = ["PUBLIC_KEY_SUFFIX", "PartyKeyRegistry"]

PUBLIC_KEY_SUFFIX = ".pub.pem"


class PartyKeyRegistry(Mapping[str, PublicKey]):
    """Read-only mapping from party id to that party's public key.

    Parameters
    ----------
    keys : Mapping of str to public key
        Ed25519 or EC P-384 public keys; every party id must match
        :data:`protocol._parameters.PARTY_ID_PATTERN`.

    Examples
    --------
    >>> registry = PartyKeyRegistry.from_directory("keys/")  # doctest: +SKIP
    >>> registry.key_id("hospital-a")                        # doctest: +SKIP
    'sha256:...'
    """

    def __init__(self, keys: Mapping[str, PublicKey]) -> None:
        checked: dict[str, PublicKey] = {}
        for party, key in keys.items():
            check_party_id(party)
            key_algorithm(key)
            checked[party] = key
        self._keys = checked
        self._ids = {party: key_id(key) for party, key in checked.items()}

    @classmethod
    def from_directory(cls, directory: str | Path) -> PartyKeyRegistry:
        """Load every ``<party_id>.pub.pem`` file of ``directory``.

        Other files are ignored.  Raises ValueError for a file whose name is
        not a valid party id or whose content is not a supported public key.
        """
        directory = Path(directory)
        if not directory.is_dir():
            raise ValueError(
                f"key directory: expected a directory of <party_id>{PUBLIC_KEY_SUFFIX} files, got {directory}"
            )
        keys = {}
        for path in sorted(directory.glob(f"*{PUBLIC_KEY_SUFFIX}")):
            party = path.name[: -len(PUBLIC_KEY_SUFFIX)]
            try:
                check_party_id(party)
            except ValueError as exc:
                raise ValueError(f"key file {path}: {exc}") from None
            keys[party] = load_public_key(path)
        return cls(keys)

    def key_id(self, party_id: str) -> str:
        """Key id of ``party_id``'s registered key (KeyError if unknown)."""
        return self._ids[party_id]

    def __getitem__(self, party_id: str) -> PublicKey:
        return self._keys[party_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"PartyKeyRegistry({sorted(self._keys)})"
