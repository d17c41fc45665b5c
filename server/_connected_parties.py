"""Which registered party each connected SuperNode is, known before any request from the SuperLink's registrations.

With SuperNode authentication (``flower-superlink --enable-supernode-auth``), a SuperNode connects only with
the key the consortium registered for it (``flwr supernode register <party-id>.auth.key.pub``), and Flower's
Grid gives the ServerApp each connected node's registered public key, and the name it was registered under
(``--name``).  Matched against the coordinator's copies of those keys (``supernode-keys-dir``:
``<party-id>.auth.key.pub`` files), or by that name when it is a registered party's id, the connected nodes
are named without asking them anything, and the registered parties (``keys-dir``) that no connected node is
are the ones that did not connect.  When a connected node is matched to no party (SuperNode authentication
off, a key missing from that directory), which registered parties did not connect is not known before a
request is sent: :meth:`ConnectedParties.not_connected` says so (None) instead of listing every registered
party as absent, online ones included.

These names are labels for people (the report, the failure text): nothing is accepted, merged or refused by
them; a release names its party by its signature.

Privacy: registrations (public keys, names) are the consortium's, not any party's data; nothing is sent.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from edprf_core.count_text import count_text
from protocol import check_party_id

if TYPE_CHECKING:
    from flwr.serverapp import Grid

__all__ = ["AUTH_KEY_SUFFIX", "ConnectedParties", "connected_parties", "supernode_key_owners"]

log = logging.getLogger("edprf.coordinator")

AUTH_KEY_SUFFIX = ".auth.key.pub"
"""Suffix of a party's SuperNode authentication key (OpenSSH format, as ``edprf certs`` writes it)."""


def _der(key) -> bytes:
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def supernode_key_owners(directory: str | Path) -> dict[bytes, str]:
    """Each ``<party-id>.auth.key.pub`` of ``directory``: its key (DER SubjectPublicKeyInfo) to the party id.

    A file whose name is not a party id, or which holds no OpenSSH public key, is logged and left out; a
    directory that cannot be read gives ``{}`` (logged): the names are diagnostics, never a reason to fail.
    """
    directory = Path(directory)
    owners: dict[bytes, str] = {}
    try:
        paths = sorted(directory.glob(f"*{AUTH_KEY_SUFFIX}"))
    except OSError as exc:
        log.warning("supernode-keys-dir %s: cannot be read (%s); connected SuperNodes are not named", directory, exc)
        return owners
    for path in paths:
        party = path.name[: -len(AUTH_KEY_SUFFIX)]
        try:
            check_party_id(party)
            owners[_der(serialization.load_ssh_public_key(path.read_bytes()))] = party
        except (OSError, ValueError, TypeError, UnsupportedAlgorithm) as exc:
            log.warning("supernode-keys-dir: %s left out: %s", path, exc)
    return owners


@dataclass(frozen=True)
class ConnectedParties:
    """The connected nodes, each named by its registration, or not matched to any party."""

    named: dict[int, str] = field(default_factory=dict)
    """Node id to party id."""
    unmatched: tuple[int, ...] = ()
    """Node ids matched to no party."""

    def not_connected(self, registered: Iterable[str]) -> list[str] | None:
        """The ``registered`` parties no connected node is (sorted); None when a connected node is not matched,
        which might be any of them."""
        if self.unmatched:
            return None
        return sorted(set(registered) - set(self.named.values()))

    def unknown_text(self, registered: int, keys_source: str) -> str:
        """Why :meth:`not_connected` is None, and how an operator finds the missing parties.

        ``keys_source`` says what the connected nodes' keys were matched against (the directory, or that
        there was none).
        """
        shown = ", ".join(sorted(self.named.values()))
        return (
            f"Which of the {count_text(registered, 'registered party', 'registered parties')} (keys-dir) did not "
            "connect is not known before a request is sent: "
            + (f"connected {shown}, and " if shown else "")
            + f"{count_text(len(self.unmatched), 'SuperNode')} matched to no party ({keys_source}). "
            "`flwr supernode ls` shows each registered SuperNode's node id and status (not online: registered or "
            "offline): match them with the node ids written down at registration, or read each party's SuperNode log"
        )


def connected_parties(
    grid: Grid, nodes: Collection[int], owners: dict[bytes, str], registered: Collection[str]
) -> ConnectedParties:
    """Name each node of ``nodes`` by its registered key (``owners``, :func:`supernode_key_owners`), else by its
    registered name when that is one of the ``registered`` party ids.  A grid that cannot say leaves every node
    unmatched (logged), and so does a party named by two nodes (a name another SuperNode registered too)."""
    try:
        infos = {info.node_id: info for info in grid.get_nodes()}
    except Exception as exc:  # noqa: BLE001 - whatever Flower's Grid raises, a diagnostic must not fail the run
        log.warning("the connected SuperNodes' registrations could not be read (%r): they are not named", exc)
        infos = {}
    named: dict[int, str] = {}
    unmatched = []
    for node in sorted(nodes):
        info = infos.get(node)
        party = _by_key(getattr(info, "public_key", b""), owners) or _by_name(getattr(info, "name", ""), registered)
        if party:
            named[node] = party
        else:
            unmatched.append(node)
    # one party named by two nodes (names are not unique in Flower, keys are): neither says which is which
    counts = Counter(named.values())
    for node in [n for n, party in named.items() if counts[party] > 1]:
        del named[node]
        unmatched.append(node)
    return ConnectedParties(named, tuple(sorted(unmatched)))


def _by_key(public_key: bytes, owners: dict[bytes, str]) -> str:
    """The party whose registered key Flower holds as ``public_key`` (PEM, what ``flwr supernode register``
    sends), or ''."""
    if not public_key or not owners:
        return ""
    try:
        return owners.get(_der(serialization.load_pem_public_key(bytes(public_key))), "")
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return ""


def _by_name(name: str, registered: Collection[str]) -> str:
    """``name`` when it is a registered party's id (given at registration: ``flwr supernode register --name``)."""
    return name if isinstance(name, str) and name in registered else ""
