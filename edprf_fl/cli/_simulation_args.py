"""The options of a simulated federation, read into :class:`edprf_fl.simulation.SimulationSettings`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edprf_fl.simulation import ENGINES, LEAVES, PARTITIONS, SETTING_DEFAULTS, SPLIT_MODES

if TYPE_CHECKING:
    from edprf_fl.simulation import SimulationSettings

__all__ = ["DEFAULTS", "add_federation_arguments", "flag_of", "settings_from_args"]

DEFAULTS = argparse.Namespace(**SETTING_DEFAULTS)
"""Every option's default is the settings' default (read without importing the core: ``edprf --help`` stays fast)."""

_FLAGS = {
    "shuffled_label_parties": "--shuffle-labels-party",
    "header": "--no-header",
    "baselines": "--no-baselines",
}
"""Settings whose flag is not the setting's name in kebab case."""


def flag_of(setting: str) -> str:
    """The command-line flag of a setting: ``shuffled_label_parties`` -> ``--shuffle-labels-party``, ``epsilon`` -> ``--epsilon``."""
    return _FLAGS.get(setting, "--" + setting.replace("_", "-"))


def settings_from_args(args: argparse.Namespace, **changes: Any) -> SimulationSettings:
    """The settings the options ask for (with ``changes`` on top); errors name the flags.

    Raises
    ------
    ValueError
        A setting out of its range, the message naming its flag (``--max-depth: expected ...``).
    """
    from edprf_fl.simulation import SettingsError, SimulationSettings

    given = {name: getattr(args, name) for name in SimulationSettings.field_names() if hasattr(args, name)}
    given["header"] = not getattr(args, "no_header", False)
    given["baselines"] = not getattr(args, "no_baselines", False)
    try:
        return SimulationSettings(**(given | changes))
    except SettingsError as exc:
        raise ValueError(exc.describe(flag_of)) from None


def _depth(text: str) -> int | str:
    """``auto`` or an integer; anything else is left for the settings to refuse by name."""
    try:
        return int(text)
    except ValueError:
        return text


def add_federation_arguments(p: argparse.ArgumentParser) -> None:
    """The options of a simulated federation (``edprf simulate`` and ``edprf sweep``), defaults from the settings."""
    p.add_argument(
        "--data",
        type=Path,
        default=DEFAULTS.data,
        help="CSV (or Parquet) with the schema's columns and label (default: the embedded dataset)",
    )
    p.add_argument(
        "--sep", default=DEFAULTS.sep, help="field separator of --data, one character (default: %(default)r)"
    )
    p.add_argument(
        "--no-header",
        action="store_true",
        help="--data has no header line: its columns are the schema's features in order, then the label",
    )
    p.add_argument(
        "--schema", type=Path, default=DEFAULTS.schema, help="schema TOML of --data (default: the embedded dataset's)"
    )
    p.add_argument(
        "--dataset",
        default=DEFAULTS.dataset,
        help="embedded dataset when --data is not given (default: %(default)s)",
    )
    p.add_argument("--parties", type=int, default=DEFAULTS.parties, help="simulated parties (default: %(default)s)")
    p.add_argument(
        "--partition",
        choices=PARTITIONS,
        default=DEFAULTS.partition,
        help="how rows are split among parties: at random, label-skewed (Dirichlet --alpha), or by the "
        "values of --column (default: %(default)s)",
    )
    p.add_argument("--alpha", type=float, default=DEFAULTS.alpha, help="Dirichlet concentration (default: %(default)s)")
    p.add_argument("--column", default=DEFAULTS.column, help="column that assigns rows to parties (--partition column)")
    p.add_argument(
        "--epsilon", type=float, default=DEFAULTS.epsilon, help="epsilon of each party's release (default: %(default)s)"
    )
    p.add_argument(
        "--max-depth",
        type=_depth,
        default=DEFAULTS.max_depth,
        help="split levels per tree, or 'auto': each party chooses its depth (at most 12) from a DP "
        "count of its rows, charged within its epsilon (default: %(default)s)",
    )
    p.add_argument(
        "--leaf",
        choices=LEAVES,
        default=DEFAULTS.leaf,
        help="what leaves release: noisy class counts (probabilities) or the paper's label (votes) "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--n-trees",
        type=int,
        default=DEFAULTS.n_trees,
        help="trees each party releases (default: %(default)s)",
    )
    p.add_argument(
        "--n-bins",
        type=int,
        default=DEFAULTS.n_bins,
        help="bins of continuous features (default: %(default)s)",
    )
    p.add_argument(
        "--split-mode",
        choices=SPLIT_MODES,
        default=DEFAULTS.split_mode,
        help="binary (feature, threshold) splits or the paper's multiway splits (default: %(default)s)",
    )
    p.add_argument(
        "--evaluation-epsilon",
        type=float,
        default=DEFAULTS.evaluation_epsilon,
        help="epsilon of each party's noised held-out metrics; 0 skips that round (default: %(default)s)",
    )
    p.add_argument(
        "--evaluation-max-interval-width",
        type=float,
        default=DEFAULTS.evaluation_max_interval_width,
        help="skip the parties' evaluation (spending nothing) when its 95%% interval would be wider "
        "than this; 1 evaluates whatever the width (default: %(default)s)",
    )
    p.add_argument(
        "--party-holdout",
        type=float,
        default=DEFAULTS.party_holdout,
        help="share of each party's rows kept for its own evaluation (default: %(default)s)",
    )
    p.add_argument(
        "--test-size", type=float, default=DEFAULTS.test_size, help="central held-out test share (default: %(default)s)"
    )
    p.add_argument(
        "--validation-size",
        type=float,
        default=DEFAULTS.validation_size,
        help="share of the training rows kept by the coordinator as its own validation data "
        "(contribution report, quality flags, selection); 0 disables (default: %(default)s)",
    )
    p.add_argument(
        "--selective",
        action="store_true",
        help="selective aggregation: keep only parties whose trees raise validation accuracy",
    )
    p.add_argument("--exclude-flagged", action="store_true", help="drop parties the quality test flags")
    p.add_argument(
        "--shuffle-labels-party",
        dest="shuffled_label_parties",
        metavar="SHUFFLE_LABELS_PARTY",
        type=int,
        action="append",
        default=list(DEFAULTS.shuffled_label_parties),
        help="research: give this party (0-based) shuffled labels, a low-quality party (repeatable)",
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default=DEFAULTS.engine,
        help="simulation engine: 'in-process' calls the real ServerApp and ClientApps in this process, "
        "messages in Flower's wire form (fast, no Ray); 'ray' is Flower's simulation engine, what "
        "`flwr run` uses (about 10 s of start-up per run) (default: %(default)s)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=DEFAULTS.seed,
        help="seed of the train/test split, the partition and the baselines (default: %(default)s)",
    )
    p.add_argument(
        "--seeded-noise",
        action="store_true",
        help="research: parties draw their DP noise from seeds derived from --seed (reproducible, fast, "
        "NOT private against anyone who knows the seed); default: production randomness, "
        "exact samplers",
    )
