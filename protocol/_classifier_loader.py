"""Load a global model as a fitted scikit-learn classifier, with its provenance.

The documented entry point for *using* a model (no Flower import anywhere on
this path)::

    from protocol import load_classifier

    clf = load_classifier("global-model.edprf", keys_dir="keys/")  # verifies every party's signature
    clf.predict_proba(X)            # X: DataFrame with clf.feature_names_in_, or an array in that order
    print(clf.provenance.describe())

Privacy: loading and predicting are post-processing of the parties' DP
releases; nothing here spends ε or reads a party's data.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from edprf_core.count_text import count_text

from ._global_model import GlobalModelView, load_global_model
from ._registry import PartyKeyRegistry
from ._signature import SignatureStatus

if TYPE_CHECKING:
    from edprf_core import ReleasedForestClassifier

__all__ = ["ModelProvenance", "load_classifier", "load_model_with_provenance", "provenance_of"]


@dataclass(frozen=True)
class ModelProvenance:
    """Where a loaded model came from and whether that was checked.

    Attributes
    ----------
    source : str
        The file the model was read from.
    run_id : str
        The coordinator's run id (from the model's manifest; ``""`` when absent).
    parties : tuple of str
        Party ids, one per release, in the stored order.
    signatures : tuple of str
        Each release's :class:`SignatureStatus` value: ``"verified"`` (by the
        keys given), ``"unverified"`` (signed, no keys given), ``"unsigned"``,
        ``"invalid"``.
    keys_dir : str
        The key directory used, ``""`` when none was given.
    schema_name, schema_fingerprint : str
    n_trees : int
    guarantee : str
        The merged forest's privacy statement.
    dp : bool
        Whether every part of the forest is differentially private as released.
    """

    source: str
    run_id: str
    parties: tuple[str, ...]
    signatures: tuple[str, ...]
    keys_dir: str
    schema_name: str
    schema_fingerprint: str
    n_trees: int
    guarantee: str
    dp: bool

    def __repr__(self) -> str:
        """One line (a loaded classifier's repr shows its provenance): source, run, parties, signatures; the
        guarantee is in :attr:`guarantee` and :meth:`describe`."""
        verified = "verified" if self.verified else "NOT verified"
        return (
            f"ModelProvenance(source={self.source!r}, run_id={self.run_id!r}, {count_text(len(self.parties), 'party', 'parties')}, "
            f"signatures {verified}, {'DP' if self.dp else 'NOT DP'})"
        )

    @property
    def verified(self) -> bool:
        """Whether every release's signature verified against the given keys."""
        return bool(self.signatures) and all(s == SignatureStatus.VERIFIED.value for s in self.signatures)

    def signature_summary(self) -> str:
        """One phrase: verified by the keys, or why not."""
        if self.verified:
            return f"all {len(self.signatures)} releases' signatures verified with the keys in {self.keys_dir}"
        counts: dict[str, int] = {}
        for status in self.signatures:
            counts[status] = counts.get(status, 0) + 1
        shown = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        signed = SignatureStatus.UNVERIFIED.value in counts  # unsigned releases have nothing to verify
        hint = "" if self.keys_dir or not signed else "; pass the parties' public keys (--keys DIR) to verify them"
        return f"signatures NOT verified ({shown}){hint}"

    def describe(self) -> list[str]:
        """The lines ``edprf predict`` and ``edprf evaluate`` print once, before any result."""
        lines = [
            (
                f"model: {self.source} (run {self.run_id or 'unknown'}; schema {self.schema_name!r}, "
                f"{self.schema_fingerprint})"
            ),
            f"parties: {len(self.parties)} ({', '.join(self.parties)}), {self.n_trees} trees",
            f"provenance: {self.signature_summary()}",
        ]
        lines += ["guarantee: " + self.guarantee.replace("\n", "\n  ")]
        return lines

    def as_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "run_id": self.run_id,
            "parties": list(self.parties),
            "signatures": list(self.signatures),
            "verified": self.verified,
            "keys_dir": self.keys_dir,
            "schema_name": self.schema_name,
            "schema_fingerprint": self.schema_fingerprint,
            "n_trees": self.n_trees,
            "dp": self.dp,
            "guarantee": self.guarantee,
        }


def provenance_of(view: GlobalModelView, source: str, keys_dir: str = "") -> ModelProvenance:
    """The provenance record of a loaded global model."""
    run_id = view.manifest.get("run_id", "")
    return ModelProvenance(
        source=source,
        run_id=run_id if isinstance(run_id, str) else str(run_id),
        parties=view.parties,
        signatures=tuple(r.signature_status.value for r in view.releases),
        keys_dir=keys_dir,
        schema_name=view.schema.name,
        schema_fingerprint=view.schema.fingerprint,
        n_trees=view.forest.n_trees,
        guarantee=view.forest.guarantee(),
        dp=view.forest.dp,
    )


def load_classifier(path: str | Path, keys_dir: str | Path | None = None) -> ReleasedForestClassifier:
    """Load ``global-model.edprf`` as a fitted scikit-learn classifier.

    Parameters
    ----------
    path : str or Path
        A global model written by the coordinator.
    keys_dir : str or Path, optional
        A directory of ``<party_id>.pub.pem`` files (the coordinator's
        ``keys-dir``).  Given, every release must carry a valid signature by
        its party's key, or :class:`protocol.InvalidRelease` is raised.
        Without it the releases are checked structurally only and their
        signatures are recorded as not verified.

    Returns
    -------
    ReleasedForestClassifier
        With ``provenance`` set to a :class:`ModelProvenance`.

    Raises
    ------
    InvalidRelease
        A malformed model, a release that fails its checks, or (with keys) a
        signature that does not verify.
    ValueError
        An unreadable key directory.

    Notes
    -----
    Privacy cost: none.  The model is the parties' DP releases; loading it is
    post-processing.  Does not import Flower.
    """
    from edprf_core import ReleasedForestClassifier  # scikit-learn: loaded when needed

    view, provenance = load_model_with_provenance(path, keys_dir)
    return ReleasedForestClassifier(view.forest, provenance=provenance)


def load_model_with_provenance(
    path: str | Path, keys_dir: str | Path | None = None
) -> tuple[GlobalModelView, ModelProvenance]:
    """:func:`load_classifier`'s checks without scikit-learn: the loaded model and its provenance.

    What ``edprf predict`` and ``edprf evaluate`` use (they need the forest, not an estimator, and start
    faster without importing scikit-learn).  Raises as :func:`load_classifier`.  Privacy cost: none.
    """
    registry = PartyKeyRegistry.from_directory(keys_dir) if keys_dir is not None else None
    view = load_global_model(Path(path), registry=registry, strict=True)
    return view, provenance_of(view, str(path), str(keys_dir) if keys_dir is not None else "")
