"""Rules and importances of a release or global model, for ``edprf inspect --rules``.

Post-processing of released values only: the trees' structure, their noisy
leaf counts or labels, the noisy marginals of a model with a marginals part,
and the public schema.  No data file is read.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = [
    "DEFAULT_MAX_FEATURES",
    "DEFAULT_MAX_LEAVES",
    "DEFAULT_MAX_TREES",
    "add_rules_arguments",
    "importance_lines",
    "positive_integer",
    "rules_lines",
]

DEFAULT_MAX_TREES = 3
"""Trees ``edprf inspect --rules`` prints unless told otherwise (the rest are counted)."""
DEFAULT_MAX_LEAVES = 32
"""Leaves per tree (and bins per feature of a marginals part) ``edprf inspect --rules`` prints by default."""
DEFAULT_MAX_FEATURES = 20
"""Features of a marginals part ``edprf inspect --rules`` prints unless told otherwise."""
SHOWN_FEATURES = 10


def positive_integer(text: str) -> int:
    """An option's value as an integer >= 1 (argparse ``type``), refused with the value otherwise."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text}")
    return value


def add_rules_arguments(parser: argparse.ArgumentParser) -> None:
    """``--rules``, ``--show-trees``, ``--show-leaves``, ``--show-features`` (``--max-n-trees`` is inspect's
    refusal limit)."""
    parser.add_argument(
        "--rules",
        action="store_true",
        help=(
            "print the trees as rules with their released noisy counts (and a marginals part's noisy histograms), "
            "and feature importances"
        ),
    )
    parser.add_argument(
        "--show-trees",
        type=positive_integer,
        default=DEFAULT_MAX_TREES,
        metavar="N",
        help=f"with --rules: trees shown (default {DEFAULT_MAX_TREES})",
    )
    parser.add_argument(
        "--show-leaves",
        type=positive_integer,
        default=DEFAULT_MAX_LEAVES,
        metavar="N",
        help=f"with --rules: leaves shown per tree, bins per feature of a marginals part (default {DEFAULT_MAX_LEAVES})",
    )
    parser.add_argument(
        "--show-features",
        type=positive_integer,
        default=DEFAULT_MAX_FEATURES,
        metavar="N",
        help=f"with --rules: features of a marginals part shown (default {DEFAULT_MAX_FEATURES})",
    )


def importance_lines(forest) -> list[str]:
    """The features by importance from released values (:func:`edprf_core.explain.released_importances`)."""
    import numpy as np

    from edprf_core.explain import released_importances, shown_name

    imp = released_importances(forest)
    order = np.argsort(-imp, kind="stable")[:SHOWN_FEATURES]
    names = forest.schema.feature_names
    rule = (
        "decrease in weighted Gini impurity of the released noisy counts; label-only trees: splits weighted by "
        "their share of paths"
    )
    if forest.marginals is not None:
        s = forest.marginals_share
        rule = (
            f"{1 - s:g} * the trees' ({rule}) + {s:g} * the marginals part's (the spread over classes of each "
            "bin's log-ratio, averaged over bins by their noisy counts), each normalized"
        )
    lines = [f"feature importances ({rule}; computed from the model file alone, no data read):"]
    lines += [f"  {shown_name(names[j])}: {imp[j]:.4f}" for j in order if imp[j] > 0]
    if len(names) > SHOWN_FEATURES:
        lines.append(f"  ... {len(names) - SHOWN_FEATURES} more features not shown")
    return lines


def rules_lines(
    data: bytes, schema_path: Path | None, max_trees: int, max_leaves: int, max_features: int = DEFAULT_MAX_FEATURES
) -> list[str]:
    """Rules and importances of the forest in ``data`` (a global model or a release)."""
    import protocol
    from edprf_core.explain import forest_rules_text

    from ._inspect import _find_schema

    try:
        forest = protocol.load_global_model(data, strict=False).forest
    except protocol.InvalidRelease:
        header = protocol.read_release_header(data, protocol.INSPECTION_POLICY.max_bytes)
        schema = _find_schema(header.schema_fingerprint, schema_path)
        if schema is None:
            return ["rules: not shown (schema with this fingerprint not found; pass --schema TOML)"]
        forest = protocol.decode_release(data, schema, protocol.INSPECTION_POLICY).forest
    return forest_rules_text(
        forest, max_trees=max_trees, max_leaves=max_leaves, max_features=max_features
    ) + importance_lines(forest)
