"""``edprf inspect FILE``: what a release or a global model says, and whether to trust it.

Shows the format version, the party or parties, the schema fingerprint, the
training parameters, trees and nodes, the privacy guarantee (with the
federation caveat) and the signature status of every release.  Nothing is
trusted: the file goes through the same strict decoder as on the coordinator,
with format limits only (a release with a large ε is shown, not refused).

Exit status: 0 valid; 1 not a valid release or global model, or one beyond
inspect's limits; 3 a signature is invalid, or (with ``--keys``) a release is
not verified: unsigned, or from a party with no key in ``--keys`` (shown as
"not verified", not INVALID: after a party's removal its old releases are
correctly signed by a key that has left the directory).

Bounded work: the sizes a file declares (releases, trees, nodes) are read first
without decoding it (:func:`protocol.peek_global_model`, or a release's header);
a file beyond ``--max-releases``, ``--max-n-trees`` or ``--max-nodes`` is refused in
one line before anything is decoded, so time and memory grow with those limits,
not with what the file claims.  Every line is printed through
:func:`edprf_fl.cli._terminal_text.terminal_safe`: text from the file cannot reach the
terminal as escape sequences.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ._terminal_text import terminal_safe

if TYPE_CHECKING:
    from edprf_core import Schema, TrainingParameters
    from protocol import GlobalModelView, PartyKeyRegistry, ReleaseHeader

__all__ = ["EXIT_INVALID", "EXIT_OK", "EXIT_SIGNATURE", "read_bounded_regular_file", "register", "run_inspect"]

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_SIGNATURE = 3

MAX_RELEASES = 1_000
"""Default ``--max-releases``: each release is decoded and checked on its own (Python work per release)."""
MAX_TREES = 5_000
"""Default ``--max-n-trees`` (a party's default ``max-evaluation-trees``)."""
MAX_NODES = 1_000_000
"""Default ``--max-nodes`` (a party's default ``max-evaluation-nodes``)."""
SHOWN_RELEASES = 50
"""Releases of a global model described one by one; the rest are counted."""
MAX_LINE_CHARS = 20_000
"""Longest line printed (longer ones are cut and marked)."""

_STATUS_TEXT = {
    "verified": "verified",
    "unverified": "signed, not verified (pass --keys DIR)",
    "unsigned": "unsigned",
    "unknown_party": "not verified",
    "invalid": "INVALID",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``inspect`` subcommand."""
    from ._exit_text import exit_epilog

    parser = subparsers.add_parser(
        "inspect",
        help="show and check a DP forest release or a global model",
        description="What a release or a global model says, and whether to trust it: its format version, parties, "
        "schema fingerprint, training parameters, trees and nodes, privacy guarantee and the signature status of "
        "every release.",
        epilog=exit_epilog(
            "0 valid; 1 invalid file (said on stderr); 3 a signature invalid or (with --keys) a release not verified: "
            "unsigned, or no key in DIR for its party (a retired party: verify with its archived key)"
        ),
    )
    parser.add_argument("file", type=Path, metavar="FILE", help="a SignedRelease or GlobalModel file")
    parser.add_argument(
        "--keys", type=Path, metavar="DIR", help="directory of <party_id>.pub.pem files: verify every signature"
    )
    parser.add_argument(
        "--schema",
        type=Path,
        metavar="TOML",
        help="schema of a single release (default: a shipped example schema with its fingerprint)",
    )
    parser.add_argument(
        "--show-schema",
        action="store_true",
        help="also print the schema a global model carries, as TOML (the columns, bounds, categories, missing "
        "rules and sources, where units are written, that DATA must follow)",
    )
    parser.add_argument(
        "--max-releases",
        type=int,
        default=MAX_RELEASES,
        metavar="N",
        help=f"refuse global models of more releases (default {MAX_RELEASES})",
    )
    parser.add_argument(
        "--max-n-trees",
        type=int,
        default=MAX_TREES,
        metavar="N",
        help=f"refuse files of more trees (default {MAX_TREES})",
    )
    parser.add_argument(
        "--max-nodes",
        type=int,
        default=MAX_NODES,
        metavar="N",
        help=f"refuse files of more nodes (default {MAX_NODES})",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout instead of the text (format 'edprf-inspect/1': kind, parties, "
        "parameters, trees and nodes, privacy with dp and not_dp_reasons, each release's signature; "
        "docs/reference/inspect-json.md); an error is one object too, with its exit status; not with --rules or "
        "--show-schema",
    )
    from ._model_rules import add_rules_arguments

    add_rules_arguments(parser)
    parser.set_defaults(handler=run_inspect)


def run_inspect(args: argparse.Namespace) -> int:
    """Handler of ``edprf inspect``; returns the exit status.

    Read-only and total: the file is opened read-only, must be a regular file
    (FIFOs, devices, directories are refused before any read), and at most
    ``max_bytes + 1`` bytes are read.  Any input ends in output lines and an
    exit status, or one line ``edprf inspect: error: FILE: not a valid release or global model: ...``
    on stderr (nothing on stdout) and :data:`EXIT_INVALID`; never a traceback.
    """
    import protocol  # imported here: `edprf --help` stays fast

    from ._inspect_limits import BeyondLimits

    as_json = getattr(args, "json", False)
    if as_json and (getattr(args, "rules", False) or getattr(args, "show_schema", False)):
        from ._usage_error import UsageError

        raise UsageError(
            "--json: not with --rules or --show-schema (they print text); run inspect --json and inspect --rules "
            "(or --show-schema) separately"
        )
    path: Path = args.file
    try:
        registry = protocol.PartyKeyRegistry.from_directory(args.keys) if args.keys else None
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback
        return _error(f"{terminal_safe(args.keys)}: cannot load party keys: {_one_line(exc)}", as_json)
    limits = {
        "releases": getattr(args, "max_releases", MAX_RELEASES),
        "trees": getattr(args, "max_n_trees", MAX_TREES),
        "nodes": getattr(args, "max_nodes", MAX_NODES),
    }
    shown = terminal_safe(path)
    try:
        data = read_bounded_regular_file(path, protocol.INSPECTION_POLICY.max_bytes)
        if not data:  # parsed, it would read as format version 0: "expected 2, got 0"
            return _error(f"{shown}: not a valid release or global model: empty (0 bytes), not an edprf file", as_json)
        lines, statuses, verdict, facts = _describe(data, registry, args.schema, limits, args.keys, path)
        if getattr(args, "rules", False):
            from ._model_rules import rules_lines

            lines += rules_lines(data, args.schema, args.show_trees, args.show_leaves, args.show_features)
    except BeyondLimits as exc:
        return _error(f"{shown}: not checked: {_one_line(exc)}", as_json)
    except protocol.InvalidRelease as exc:
        return _error(f"{shown}: not a valid release or global model: {_one_line(exc)}", as_json)
    except Exception as exc:  # noqa: BLE001 - malformed content of any kind: one line, never a traceback
        return _error(f"{shown}: not a valid release or global model: {type(exc).__name__}: {_one_line(exc)}", as_json)
    status = _exit_status(statuses, registry is not None)
    if as_json:
        from ._inspect_json import shown_json

        print(shown_json(facts, str(path), status))
        return status
    if verdict:
        print(terminal_safe(f"privacy: {verdict}", MAX_LINE_CHARS))
    print(f"file: {shown}")
    print("\n".join(terminal_safe(line, MAX_LINE_CHARS) for line in lines))
    if getattr(args, "show_schema", False):
        print("\n".join(terminal_safe(line, MAX_LINE_CHARS) for line in _schema_toml(data).split("\n")))
    return status


_ERROR_PREFIX = "edprf inspect: error: "
"""What heads each of ``inspect``'s error lines on stderr, as every ``edprf`` command's (review rev-auto A13)."""


def _error(text: str, as_json: bool = False) -> int:
    """Say why the file was not shown: one line on stderr, stdout left empty for a script that reads it (with
    ``--json``: one object there, ``error`` and ``exit_status``); returns :data:`EXIT_INVALID`."""
    if as_json:
        from ._inspect_json import error_json

        print(error_json(text, EXIT_INVALID))
    print(_ERROR_PREFIX + text, file=sys.stderr)
    return EXIT_INVALID


def _one_line(exc: BaseException) -> str:
    return terminal_safe(" ".join(str(exc).split()), 500)


_LIMIT_OPTIONS = {"releases": "--max-releases", "trees": "--max-n-trees", "nodes": "--max-nodes"}
"""The option that raises each of inspect's limits."""


def _check_limits(what: str, sizes: dict[str, int], limits: dict[str, int]) -> None:
    """Refuse, before decoding, a file whose declared sizes pass a limit (the message names the option)."""
    from ._inspect_limits import BeyondLimits

    over = [name for name, value in sizes.items() if value > limits[name]]
    if over:
        declared = ", ".join(f"{value} {name}" for name, value in sizes.items())
        allowed = ", ".join(f"{name} <= {limits[name]}" for name in over)
        options = "/".join(_LIMIT_OPTIONS[name] for name in over)
        raise BeyondLimits(
            f"{what} declares {declared}, beyond inspect's limits ({allowed}); raise {options} to inspect it anyway"
        )


def read_bounded_regular_file(path: Path, max_bytes: int) -> bytes:
    """Read a regular file of at most ``max_bytes`` bytes, read-only.

    Opened with ``O_RDONLY | O_NONBLOCK`` (a FIFO never blocks the open), checked
    with ``fstat`` on the open descriptor (no race with a rename), then read with
    at most ``max_bytes + 1`` bytes so a file that grows after the check is still
    refused.  No cost in ε: it reads a file.

    Raises
    ------
    protocol.InvalidRelease
        Not a regular file, or larger than ``max_bytes``; ``OSError`` text for
        a file that cannot be opened.
    """
    import protocol

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise protocol.InvalidRelease(protocol.Reason.MALFORMED, f"cannot open: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise protocol.InvalidRelease(
                protocol.Reason.MALFORMED, f"expected a regular file, got {_file_kind(info.st_mode)}"
            )
        if info.st_size > max_bytes:
            raise protocol.InvalidRelease(
                protocol.Reason.TOO_LARGE, f"expected at most {max_bytes} bytes, got {info.st_size}"
            )
        chunks: list[bytes] = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as exc:
        raise protocol.InvalidRelease(protocol.Reason.MALFORMED, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise protocol.InvalidRelease(
            protocol.Reason.TOO_LARGE, f"expected at most {max_bytes} bytes, got more (file grew while read)"
        )
    return data


def _file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a special file"


def _exit_status(statuses: Sequence[str], with_keys: bool) -> int:
    bad = {"invalid", "unknown_party"} | ({"unsigned", "unverified"} if with_keys else set())
    return EXIT_SIGNATURE if any(s in bad for s in statuses) else EXIT_OK


def _describe(
    data: bytes,
    registry: PartyKeyRegistry | None,
    schema_path: Path | None,
    limits: dict[str, int],
    keys_dir: Path | None = None,
    path: Path | None = None,
) -> tuple[list[str], list[str], str, dict]:
    """Text lines, signature statuses, the one-sentence privacy verdict (``""`` for a release whose structure
    was not checked) and the same facts for ``--json`` (:mod:`._inspect_json`); tries a release first, then a
    global model.

    The declared sizes are checked against ``limits`` before anything is decoded.  ``path``: the file read (a
    ``report.json`` beside a global model is read too, :func:`._inspect_model.report_lines`).
    """
    import protocol

    try:
        header = protocol.read_release_header(data, protocol.INSPECTION_POLICY.max_bytes, registry)
    except protocol.InvalidRelease as as_release:
        if as_release.reason is not protocol.Reason.MALFORMED:
            raise  # it is a release, and a bad one
        try:
            sizes = protocol.peek_global_model(data, protocol.INSPECTION_POLICY.max_bytes)
        except protocol.InvalidRelease as as_model:
            raise protocol.InvalidRelease(
                as_model.reason, f"neither a release ({as_release.message}) nor a global model ({as_model.message})"
            ) from None
        _check_limits(
            "the global model", {"releases": sizes.n_releases, "trees": sizes.n_trees, "nodes": sizes.n_nodes}, limits
        )
        try:
            view = protocol.load_global_model(data, registry=registry, strict=False)
        except protocol.InvalidRelease as as_model:
            raise protocol.InvalidRelease(
                as_model.reason, f"neither a release ({as_release.message}) nor a global model ({as_model.message})"
            ) from None
        lines, facts = _describe_model(view, keys_dir, path)
        return lines, [r.signature_status.value for r in view.releases], view.forest.verdict(), facts
    _check_limits("the release", {"trees": header.n_trees, "nodes": header.n_nodes}, limits)
    lines, verdict, facts = _describe_release(data, header, schema_path, keys_dir)
    return lines, [header.signature.status.value], verdict, facts


def _parameters_line(p: TrainingParameters) -> str:
    """The parameters a release carries (the wire has no research options: those are always the production ones);
    ``dp`` is whether they give a DP release (False for a seeded one, with ``seeded=True``)."""
    return (
        f"epsilon={p.epsilon:g} relation={p.relation} split_mode={p.split_mode} max_depth={p.max_depth} "
        f"n_trees={p.n_trees} n_bins={p.n_bins} dp={not p.not_dp_reasons()} seeded={p.seeded} "
        f"sampler={p.sampler} leaf={p.leaf} depth_rule={p.depth_rule} count_epsilon={p.count_epsilon:g}"
        + (f" marginals_share={p.marginals_share:g} marginals_bins={p.marginals_bins}" if p.marginals_share else "")
    )


SHOWN_LEAVES = 8
"""Leaves whose noisy counts ``edprf inspect`` prints per tree (the output stays a few lines long)."""


def _counts_lines(forest, indent: str = "") -> list[str]:
    """The noisy leaf class counts of a forest, a few leaves per tree (post-processing: no ε)."""
    trees = forest.trees
    if not forest.has_counts:
        return []
    classes = "/".join(str(c) for c in forest.schema.classes)
    lines = [f"{indent}leaf counts (discrete Laplace noise, clamped at 0; classes {classes}):"]
    has = trees.has_counts()
    for t in range(min(trees.n_trees, SHOWN_LEAVES)):
        a, b = int(trees.tree_offsets[t]), int(trees.tree_offsets[t + 1])
        rows = trees.leaf_counts[a:b][has[a:b]]
        shown = " ".join("[" + ", ".join(str(int(v)) for v in row) + "]" for row in rows[:SHOWN_LEAVES])
        more = f" ... ({len(rows)} leaves, noisy total {int(rows.sum())})" if len(rows) > SHOWN_LEAVES else ""
        lines.append(f"{indent}  tree {t}: {shown}{more}")
    if trees.n_trees > SHOWN_LEAVES:
        lines.append(f"{indent}  ... and {trees.n_trees - SHOWN_LEAVES} more trees")
    return lines


def _signature_line(status: str, detail: str, party: str, keys_dir: Path | None) -> str:
    """A release's signature status as ``inspect`` prints it.

    A party without a key in ``--keys`` is "not verified", not INVALID: after its removal (runbook section 8)
    its releases in older models are correctly signed, by a key moved out of the directory.
    """
    if status == "unknown_party":
        where = f"in {keys_dir}" if keys_dir is not None else "in the key directory"
        return (
            f"not verified: no key for party {party!r} {where} (a retired party? verify with its archived key, "
            "deploy/README.md section 8)"
        )
    text = _STATUS_TEXT[status]
    return f"{text}: {detail}" if status == "invalid" else text


def _find_schema(fingerprint: str, schema_path: Path | None) -> Schema | None:
    from edprf_core import Schema, example_schema  # the core is heavy: loaded when needed
    from edprf_core.datasets import available_schemas

    if schema_path is not None:
        return Schema.from_toml(schema_path.read_text(encoding="utf-8"))
    for name in available_schemas():
        schema = example_schema(name)
        if schema.fingerprint == fingerprint:
            return schema
    return None


def _describe_release(
    data: bytes, header: ReleaseHeader, schema_path: Path | None, keys_dir: Path | None = None
) -> tuple[list[str], str, dict]:
    import protocol
    from edprf_core.forest import POOLING_NOTE

    from ._inspect_json import release_facts

    p = header.parameters
    lines = [
        f"kind: release (edprf.v1, format version {header.format_version})",
        f"party: {header.party_id}",
        f"schema fingerprint: {header.schema_fingerprint}",
        f"parameters: {_parameters_line(p)}",
        f"trees: {header.n_trees}, nodes: {header.n_nodes}",
        f"signature: {_signature_line(header.signature.status.value, header.signature.detail, header.party_id, keys_dir)}",
    ]
    schema = _find_schema(header.schema_fingerprint, schema_path)
    verdict = ""
    forest = None
    if schema is None:
        lines.append("structure: NOT CHECKED (schema with this fingerprint not found; pass --schema TOML)")
        guarantee = f"as claimed by the release (structure not checked): {p.statement()}"
    else:
        verified = protocol.decode_release(data, schema, protocol.INSPECTION_POLICY)
        lines.append(f"structure: valid on schema {schema.name!r}")
        lines += _counts_lines(verified.forest)
        forest = verified.forest
        guarantee = forest.guarantee()
        verdict = forest.verdict()
    lines.append(f"guarantee: {guarantee}")
    if p.dp and POOLING_NOTE not in guarantee:
        lines.append(f"federation: {POOLING_NOTE}")
    return lines, verdict, release_facts(header, forest, None if schema is None else schema.name, guarantee)


def _schema_toml(data: bytes) -> str:
    """``--show-schema``: the schema a global model carries, as TOML (a release carries its fingerprint only)."""
    import protocol

    try:
        view = protocol.load_global_model(data, strict=False)
    except protocol.InvalidRelease:
        return "schema: a release carries its schema's fingerprint only: no schema to show (a global model has it)"
    return "schema (TOML, as the model file carries it):\n" + view.schema.to_toml()


def _describe_model(
    view: GlobalModelView, keys_dir: Path | None = None, path: Path | None = None
) -> tuple[list[str], dict]:
    from edprf_core.count_text import count_text

    from ._inspect_json import model_facts
    from ._inspect_model import feature_lines, report_lines, without_paths

    forest = view.forest
    parties = view.parties
    listed = ", ".join(parties[:SHOWN_RELEASES]) + (
        f", ... ({len(parties) - SHOWN_RELEASES} more)" if len(parties) > SHOWN_RELEASES else ""
    )
    lines = [
        f"kind: global model (edprf.v1, format version {view.format_version})",
        f"schema: {view.schema.name!r}, fingerprint {view.schema.fingerprint}",
        f"parties: {len(view.releases)} ({listed})",
        f"trees: {forest.n_trees}, nodes: {forest.trees.n_nodes}",
        *(report_lines(path, view.manifest.get("run_id"), view.schema.fingerprint) if path is not None else []),
        *feature_lines(view.schema),
        "releases:",
    ]
    for r in view.releases[:SHOWN_RELEASES]:
        lines += [
            (
                f"  - party {r.party_id}: epsilon={r.params.epsilon:g}, {count_text(r.forest.n_trees, 'tree')}, "
                f"{count_text(r.forest.trees.n_nodes, 'node')}"
            ),
            f"    parameters: {_parameters_line(r.params)}",
            f"    signature: {_signature_line(r.signature_status.value, r.signature_detail, r.party_id, keys_dir)}",
        ]
        lines += _counts_lines(r.forest, indent="    ")
    if len(view.releases) > SHOWN_RELEASES:
        rest = view.releases[SHOWN_RELEASES:]
        statuses = sorted({r.signature_status.value for r in rest})
        lines.append(
            f"  ... and {count_text(len(rest), 'more release')} ({count_text(sum(r.forest.n_trees for r in rest), 'tree')}; "
            f"signatures: {', '.join(statuses)})"
        )
    contributions = view.manifest.get("contributions") or []
    if contributions:
        from server import contribution_lines

        lines.append("contributions (coordinator's validation data; post-processing, epsilon unchanged):")
        alpha = (view.manifest.get("parameters") or {}).get("flag_alpha")
        lines += [f"  - {line}" for line in contribution_lines(contributions[:SHOWN_RELEASES], alpha)]
        if len(contributions) > SHOWN_RELEASES:
            lines.append(f"  ... and {count_text(len(contributions) - SHOWN_RELEASES, 'more party', 'more parties')}")
    selection = view.manifest.get("selection") or {}
    if selection:
        lines.append(
            f"selective aggregation: kept {', '.join(selection.get('kept', []))}; "
            f"dropped {', '.join(selection.get('dropped', [])) or 'none'}"
        )
    rest = without_paths({k: v for k, v in view.manifest.items() if k not in ("contributions", "selection")})
    lines.append(
        "manifest (what the coordinator recorded; its 'parameters' are the run config as given, where 'auto' "
        "and 0 leave a value to the coordinator's rule: each release's parameters above are what was used; local paths not shown): "
        + json.dumps(rest, sort_keys=True, ensure_ascii=False)
    )
    first, *more = forest.guarantee().split("\n")
    lines.append("guarantee: " + first)
    lines += ["  " + line for line in more]
    return lines, model_facts(view, rest)
