"""``edprf export MODEL --format onnx -o model.onnx``: the global model as an ONNX graph, its encoding beside it.

Writes the graph (input ``codes``, and ``marginals_codes`` for a model with
a marginals part; outputs ``probabilities`` and the per-row support flags of ``edprf predict``,
``support_low``, ``support_low_features``, ``support_low_leaf_share``; see :mod:`edprf_core._onnx_export`)
and ``<OUT stem>.encoding.json``, the public encoding that turns a row into
codes (:func:`edprf_core.export.onnx_inputs` does it in Python).  Either file existing is refused unless
``--force`` is given.  Both are written to temporary files beside them and moved into place at the end, so they
come from one run: without ``--force`` a file another run wrote meanwhile is refused then too (neither file is
left); with it, a reader between the two moves may see the new graph beside the earlier encoding.  ``--pooling`` is that of ``edprf predict``, ``evaluate`` and ``explain``: the graph
gives their probabilities for the same rule (log-linear by default, the model's own).  Post-processing of the
released model: no data is read and no epsilon is spent.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ._model_args import (
    add_force_argument,
    add_pooling_argument,
    check_output_directory,
    check_output_extension,
    refuse_existing_outputs,
)

__all__ = ["EXTENSIONS", "FORMATS", "encoding_path", "register", "run_export"]

FORMATS = ("onnx",)

EXTENSIONS = {"onnx": ".onnx"}
"""What OUT's name must end in, per format (ONNX written to m.txt was never what anyone wanted)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``export`` subcommand."""
    from ._exit_text import exit_epilog

    parser = subparsers.add_parser(
        "export",
        epilog=exit_epilog(
            "0 both files written; 1 an error (an output exists without --force, not a valid model); 3 a signature that does not verify with --keys"
        ),
        help="export the global model (ONNX) for serving",
        description="The global model as an ONNX graph, with the public encoding that turns a row into the graph's "
        "inputs written beside it (OUT's stem + .encoding.json).  Post-processing of the released model: no data is "
        "read and no epsilon is spent.",
    )
    parser.add_argument("model", type=Path, metavar="MODEL", help="a GlobalModel file (global-model.edprf)")
    parser.add_argument("--format", choices=FORMATS, default="onnx", help="output format (default onnx)")
    parser.add_argument(
        "-o", "--output", type=Path, required=True, metavar="OUT", help="the file to write: .onnx for --format onnx"
    )
    add_force_argument(parser, "overwrite OUT and its encoding file if they exist")
    add_pooling_argument(parser, "the graph's probabilities")
    parser.add_argument(
        "--keys",
        type=Path,
        metavar="DIR",
        help="directory of <party_id>.pub.pem files: refuse the model unless every release verifies",
    )
    parser.set_defaults(handler=run_export)


def encoding_path(output: Path) -> Path:
    """Where the encoding goes: ``model.onnx`` -> ``model.encoding.json``."""
    return output.with_suffix(".encoding.json")


def _write_pair(model: tuple[Path, bytes], encoding: tuple[Path, bytes], force: bool) -> None:
    """Write the graph and its encoding as one output (review rev-auto A1): both to temporary files beside them,
    then both moved.  Without ``--force``, a file another run wrote there since the check at start-up is refused
    and neither is left; with it, a reader between the two moves sees the new graph beside the earlier encoding."""
    from protocol import PendingFile, commit_together

    pending: list[PendingFile] = []
    try:
        for path, data in (model, encoding):
            pending.append(PendingFile(path, replace=force, mode=0o644))
            pending[-1].open(binary=True).write(data)
        commit_together(pending)
    except FileExistsError as exc:
        which = {
            str(model[0]): f"--output {model[0]}",
            str(encoding[0]): f"{encoding[0]} (the encoding, written beside --output)",
        }
        if exc.filename not in which:
            raise
        raise ValueError(f"{which[exc.filename]} exists; pass --force to overwrite it") from None
    finally:
        for file in pending:
            file.discard()  # a temporary file left by a failure (the moved ones are gone already)


def run_export(args: argparse.Namespace) -> int:
    """Handler of ``edprf export``; returns the exit status."""
    from edprf_core.count_text import count_text
    from edprf_core.export import encoding_spec, forest_to_onnx

    from ._explain import load_forest

    check_output_extension("--output", args.output, (EXTENSIONS[args.format],), also=f"--format {args.format}")
    spec = encoding_path(args.output)
    check_output_directory("--output", args.output)  # before the model is loaded: one line, nothing written
    refuse_existing_outputs(
        [(f"--output {args.output}", args.output), (f"{spec} (the encoding, written beside --output)", spec)],
        args.force,
        model=args.model,
    )
    forest = load_forest(args.model, args.keys)
    model = forest_to_onnx(forest, pooling=args.pooling)
    encoding = (json.dumps(encoding_spec(forest), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    _write_pair((args.output, model.SerializeToString()), (spec, encoding), args.force)
    shape = f"float64 (n_rows, {forest.schema.n_features})"
    inputs, model_parts = f"input 'codes' {shape}", count_text(forest.n_trees, "tree")
    if forest.marginals is not None:
        inputs = (
            f"inputs 'codes' and 'marginals_codes' {shape} (the rows' codes on the trees' and the marginals' grids)"
        )
        model_parts += f" mixed with a marginals part of weight {forest.marginals_share:g}"
    model_parts += f", {args.pooling} pooling"
    n_features = forest.schema.n_features
    outputs = (
        f"outputs 'probabilities' (n_rows, {forest.schema.n_classes}) and the per-row support of edprf predict: "
        f"'support_low' (n_rows,), 'support_low_features' (n_rows, {n_features}), 'support_low_leaf_share' (n_rows,)"
    )
    print(f"wrote {args.output} (ONNX, {inputs}, {outputs}, {model_parts}) and {spec} (the encoding)")
    print(f"guarantee: {forest.guarantee()}")
    return 0
