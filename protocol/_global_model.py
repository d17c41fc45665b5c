"""The coordinator's global model: schema, every accepted release as received, manifest.

Because the signed releases are stored byte for byte, anyone holding the
parties' public keys can re-verify which party contributed which trees under
which ε; the merged forest is rebuilt from them on load and is never stored
separately (it could not drift from its sources).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from edprf_core import DPForest, Schema, SchemaError, merge_forests
from edprf_core.forest import MAX_TOLERATED_PARTIES, TOLERATED_PARTIES

from . import release_pb2 as pb
from ._canonical import parse_canonical, serialize_canonical
from ._decode import VerifiedRelease, decode_envelope
from ._envelope import as_bytes, open_envelope
from ._errors import InvalidRelease, Reason
from ._policy import INSPECTION_POLICY, ReleasePolicy
from ._registry import PartyKeyRegistry
from ._signature import SignatureStatus

__all__ = [
    "ROW_COUNTS_KEY",
    "ROW_COUNT_SOURCES",
    "SIMULATION_ROW_COUNTS_NOTE",
    "GlobalModelView",
    "build_global_model",
    "load_global_model",
]

MODEL_FORMAT_VERSION = 1
"""Version of the GlobalModel message (its releases carry their own versions)."""

ROW_COUNTS_KEY = "row_counts"
"""The manifest key saying where the run's row-count figures (``consortium_rows``, ``max_party_rows``) came from."""

ROW_COUNT_SOURCES = ("declared", "simulation")
"""Its values: ``"declared"``, figures the consortium declared public (or 0: none); ``"simulation"``, the exact
sizes of the parties a simulation laid out.  A manifest without the key (models written before it) reads as
``"simulation"`` when its parameters name a ``sim_dir`` and a row-count figure (the coordinator's rule), else
``"declared"``."""

SIMULATION_ROW_COUNTS_NOTE = (
    "Simulation: this run read the exact row counts of the parties it simulated as public figures "
    "(consortium_rows in the manifest's parameters, the rows all parties train on, sizes the marginals part's "
    "share and bins; max_party_rows, a bound on a party's held-out rows computed from the largest party's exact "
    "size, bounds the evaluation round), so this guarantee assumes those counts are public, which only a "
    "simulation may assume; in a deployment they are figures the consortium declares, or 0."
)
"""What every guarantee of a model whose manifest says ``row_counts = "simulation"`` ends its headline with."""

ROTATED_KEY_ADVICE = (
    "a model built before a rotation verifies with the keys registered then (runbook: 'Rotate a key', deploy/README.md)"
)
"""What a model's release signed with another key than the registered one adds to its signature's detail."""


@dataclass(frozen=True, eq=False)
class GlobalModelView:
    """A loaded global model.

    Attributes
    ----------
    format_version : int
    schema : Schema
    forest : DPForest
        The merged forest; one part per release, labelled by party id, with the conditions the
        manifest records as its ``notes`` (see :data:`ROW_COUNTS_KEY`), pooled against the number of hostile
        parties acting together the model records (:attr:`edprf_core.DPForest.tolerated_parties`).
    releases : tuple of VerifiedRelease
        In the stored order, each with its party, parameters (ε), trees and
        signature status.
    manifest : dict
        The coordinator's manifest (free-form, except :data:`ROW_COUNTS_KEY`, checked on load).
    """

    format_version: int
    schema: Schema
    forest: DPForest
    releases: tuple[VerifiedRelease, ...]
    manifest: dict[str, Any]

    @property
    def parties(self) -> tuple[str, ...]:
        return tuple(r.party_id for r in self.releases)

    @property
    def all_verified(self) -> bool:
        """Whether every release's signature was verified against a registry."""
        return all(r.signature_status is SignatureStatus.VERIFIED for r in self.releases)


def _repeated(parties: Sequence[str]) -> list[str]:
    """Party ids that occur more than once (their releases' ε would add up)."""
    return sorted(party for party, n in Counter(parties).items() if n > 1)


def build_global_model(
    schema: Schema,
    verified_releases: Sequence[VerifiedRelease],
    manifest: Mapping[str, Any],
    *,
    tolerated_parties: int = TOLERATED_PARTIES,
) -> bytes:
    """Serialize an ``edprf.v1.GlobalModel``.

    Parameters
    ----------
    schema : Schema
        The federation's schema; every release must carry its fingerprint.
    verified_releases : sequence of VerifiedRelease
        Outputs of :func:`protocol.decode_release`, at most one per party.
    manifest : mapping
        JSON-serializable (finite numbers only): run id, metrics, rejections, and
        :data:`ROW_COUNTS_KEY` (one of :data:`ROW_COUNT_SOURCES`) when the run's row-count
        figures were a simulation's exact sizes.
    tolerated_parties : int in [1, MAX_TOLERATED_PARTIES], default 1
        How many hostile parties acting together the model's pooling is bounded against (a coordinator's
        ``tolerated-parties``), recorded in the file; 1 is written as the field's default (absent), so that a
        model of the default rule reads the same in versions before the field.

    Returns
    -------
    bytes

    Raises
    ------
    ValueError
        No releases, a party twice, another schema, forests on different
        grids, a manifest with non-finite numbers or an unknown
        :data:`ROW_COUNTS_KEY` value, or a schema whose TOML form does not
        reproduce its fingerprint.
    TypeError
        A manifest that is not a mapping, or holds values JSON cannot represent.
    """
    releases = list(verified_releases)
    if not releases:
        raise ValueError("verified_releases: expected at least one release, got none")
    parties = [r.party_id for r in releases]
    duplicates = _repeated(parties)
    if duplicates:
        raise ValueError(f"verified_releases: expected one release per party, got several from {duplicates}")
    for r in releases:
        if r.forest.schema.fingerprint != schema.fingerprint:
            raise ValueError(
                f"release of {r.party_id!r}: schema fingerprint expected {schema.fingerprint}, "
                f"got {r.forest.schema.fingerprint}"
            )
    if not 1 <= tolerated_parties <= MAX_TOLERATED_PARTIES or isinstance(tolerated_parties, bool):
        raise ValueError(
            f"tolerated_parties: expected an integer in [1, {MAX_TOLERATED_PARTIES}], got {tolerated_parties!r}"
        )
    merge_forests([r.forest for r in releases], labels=parties)  # refuses mixed grids / split modes
    schema_toml = schema.to_toml()
    if Schema.from_toml(schema_toml).fingerprint != schema.fingerprint:
        raise ValueError("schema: its TOML form does not reproduce its fingerprint; the model could not be reloaded")
    if not isinstance(manifest, Mapping):
        raise TypeError(f"manifest: expected a mapping (a JSON object), got {type(manifest).__name__}")
    if (problem := _row_counts_problem(manifest)) is not None:
        raise ValueError(f"manifest: {problem}")
    manifest_json = json.dumps(dict(manifest), sort_keys=True, allow_nan=False, ensure_ascii=False)
    model = pb.GlobalModel(
        format_version=MODEL_FORMAT_VERSION,
        schema_toml=schema_toml,
        releases=[pb.SignedRelease.FromString(r.raw) for r in releases],
        manifest_json=manifest_json,
        tolerated_parties=0 if tolerated_parties == TOLERATED_PARTIES else int(tolerated_parties),
    )
    return serialize_canonical(model)


def _read_model_bytes(data_or_path: bytes | bytearray | memoryview | str | Path, max_bytes: int) -> bytes:
    if isinstance(data_or_path, (str, Path)):
        path = Path(data_or_path)
        size = path.stat().st_size
        if size > max_bytes:
            raise InvalidRelease(
                Reason.TOO_LARGE, f"global model {path}: expected at most {max_bytes} bytes, got {size}"
            )
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    else:
        data = as_bytes(data_or_path)
    if len(data) > max_bytes:
        raise InvalidRelease(Reason.TOO_LARGE, f"global model: expected at most {max_bytes} bytes, got {len(data)}")
    if not data:  # parsed, it would read as format_version 0: a puzzle, where the file is simply empty
        where = f" {data_or_path}" if isinstance(data_or_path, (str, Path)) else ""
        raise InvalidRelease(Reason.MALFORMED, f"global model{where}: empty (0 bytes): not an edprf model file")
    return data


def _schema_from_toml(text: str) -> Schema:
    try:
        return Schema.from_toml(text)
    except Exception as exc:  # noqa: BLE001 - the TOML is untrusted and Schema.from_dict is not total on it
        raise InvalidRelease(
            Reason.MALFORMED, f"global model: schema_toml expected a valid schema, got an invalid one ({exc})"
        ) from None


def _manifest_from_json(text: str) -> dict[str, Any]:
    try:
        manifest = json.loads(text, parse_constant=_refuse_constant) if text else {}
    except (ValueError, RecursionError) as exc:
        raise InvalidRelease(
            Reason.MALFORMED, f"global model: manifest_json expected JSON, got invalid text ({exc})"
        ) from None
    if not isinstance(manifest, dict):
        raise InvalidRelease(
            Reason.MALFORMED, f"global model: manifest_json expected a JSON object, got {type(manifest).__name__}"
        )
    return manifest


def _row_counts_problem(manifest: Mapping[str, Any]) -> str | None:
    """What is wrong with the manifest's :data:`ROW_COUNTS_KEY` entry (None: absent, or one of the sources)."""
    if ROW_COUNTS_KEY not in manifest or manifest[ROW_COUNTS_KEY] in ROW_COUNT_SOURCES:
        return None
    value = manifest[ROW_COUNTS_KEY]
    shown = repr(value[:40]) + ("..." if len(value) > 40 else "") if isinstance(value, str) else type(value).__name__
    expected = " or ".join(repr(s) for s in ROW_COUNT_SOURCES)
    return f"{ROW_COUNTS_KEY} expected {expected}, got {shown}"


def _row_counts_source(manifest: Mapping[str, Any]) -> str:
    """Where the run's row-count figures came from: the manifest's :data:`ROW_COUNTS_KEY`, or for a model written
    before that key, the rule the coordinator applies (a ``sim_dir`` run with a row-count figure: "simulation")."""
    if ROW_COUNTS_KEY in manifest:
        return str(manifest[ROW_COUNTS_KEY])
    parameters = manifest.get("parameters")
    if not isinstance(parameters, Mapping):
        return "declared"
    figures = any(
        isinstance(parameters.get(k), (int, float)) and not isinstance(parameters.get(k), bool) and parameters.get(k)
        for k in ("consortium_rows", "max_party_rows")
    )
    return "simulation" if parameters.get("sim_dir") and figures else "declared"


def _notes(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    """The conditions the manifest adds to the model's guarantee (:attr:`edprf_core.DPForest.notes`)."""
    return (SIMULATION_ROW_COUNTS_NOTE,) if _row_counts_source(manifest) == "simulation" else ()


def _refuse_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} (expected finite numbers only)")


def load_global_model(
    data_or_path: bytes | bytearray | memoryview | str | Path,
    registry: PartyKeyRegistry | None = None,
    policy: ReleasePolicy | None = None,
    *,
    strict: bool = True,
    max_bytes: int = INSPECTION_POLICY.max_bytes,
    manifest: bool = True,
) -> GlobalModelView:
    """Load a global model and re-check every release in it.

    Parameters
    ----------
    data_or_path : bytes or path
    registry : PartyKeyRegistry, optional
        Re-verify every release's signature against these keys.
    policy : ReleasePolicy, optional
        Limits applied to each release; default :data:`INSPECTION_POLICY`
        (format limits only: a stored model is shown, whatever its ε).
    strict : bool, default True
        With a registry, refuse the model unless every release verifies.
        ``False`` records each release's status instead (for inspection).
    max_bytes : int
        Size cap of the whole model, checked before reading it all.
    manifest : bool, default True
        Parse the manifest JSON, and give the forest the conditions it records
        (:data:`SIMULATION_ROW_COUNTS_NOTE` when :data:`ROW_COUNTS_KEY` is ``"simulation"``),
        which its guarantee then states.  ``False`` (a party evaluating the model: it needs only
        the trees) leaves it unread, the view's manifest empty and the forest without notes, so
        a large manifest costs no more than its bytes.

    Raises
    ------
    InvalidRelease
        For a malformed model or any release that fails its checks (the
        message names the release); ``duplicate_party`` for two releases of
        one party; ``schema_mismatch`` for forests on different grids.
    """
    policy = INSPECTION_POLICY if policy is None else policy
    data = _read_model_bytes(data_or_path, max_bytes)
    model = parse_canonical(pb.GlobalModel, data, "global model")
    if model.format_version != MODEL_FORMAT_VERSION:
        raise InvalidRelease(
            Reason.UNKNOWN_VERSION,
            f"global model: format_version expected {MODEL_FORMAT_VERSION}, got {model.format_version}",
        )
    schema = _schema_from_toml(model.schema_toml)
    manifest_record = _manifest_from_json(model.manifest_json) if manifest else {}
    if (problem := _row_counts_problem(manifest_record)) is not None:
        raise InvalidRelease(Reason.MALFORMED, f"global model: manifest {problem}")
    if not model.releases:
        raise InvalidRelease(Reason.MALFORMED, "global model: expected at least one release, got none")
    releases = []
    for i, signed in enumerate(model.releases):
        what = f"release {i}"
        envelope = open_envelope(serialize_canonical(signed), policy.max_bytes, registry, what=what)
        what = f"release {i} (party {envelope.release.party_id!r})"
        if envelope.signature.other_key:  # a model kept from before a rotation, most likely: say how to verify it
            check = envelope.signature
            envelope = replace(envelope, signature=replace(check, detail=f"{check.detail}; {ROTATED_KEY_ADVICE}"))
        releases.append(
            decode_envelope(envelope, schema, policy, enforce_signature=strict and registry is not None, what=what)
        )
    parties = [r.party_id for r in releases]
    duplicates = _repeated(parties)
    if duplicates:
        raise InvalidRelease(
            Reason.DUPLICATE_PARTY, f"global model: expected one release per party, got several from {duplicates}"
        )
    if model.tolerated_parties > MAX_TOLERATED_PARTIES:
        raise InvalidRelease(
            Reason.MALFORMED,
            f"global model: tolerated_parties expected at most {MAX_TOLERATED_PARTIES}, got {model.tolerated_parties}",
        )
    try:
        forest = merge_forests(
            [r.forest for r in releases], labels=parties, tolerated_parties=model.tolerated_parties or TOLERATED_PARTIES
        )
    except SchemaError as exc:
        raise InvalidRelease(Reason.SCHEMA_MISMATCH, f"global model: releases cannot be merged ({exc})") from None
    if notes := _notes(manifest_record):
        forest = replace(forest, notes=notes, _routing={})
    return GlobalModelView(
        format_version=model.format_version,
        schema=schema,
        forest=forest,
        releases=tuple(releases),
        manifest=manifest_record,
    )
