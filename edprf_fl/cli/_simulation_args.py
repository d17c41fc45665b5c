"""The options of a simulated federation, read into :class:`edprf_fl.simulation.SimulationSettings`."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edprf_fl.simulation import ENGINES, LEAVES, PARTITIONS, SETTING_DEFAULTS, SPLIT_MODES

from ._arg_types import SEP_TAB_HELP as _TAB
from ._arg_types import separator

if TYPE_CHECKING:
    from edprf_fl.simulation import SimulationSettings

__all__ = [
    "DEFAULTS",
    "add_federation_arguments",
    "depth_or_auto",
    "flag_of",
    "refuse_unused_partition_options",
    "settings_from_args",
]

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
    if getattr(args, "data", None) is None and "sep" in given:  # the settings refuse only a separator not the default
        raise ValueError(
            f"--sep describes --data, and no --data was given: the embedded --dataset "
            f"{given.get('dataset', DEFAULTS.dataset)!r} would run, with its own schema and format; give --data, or "
            "drop --sep"
        )
    if getattr(args, "data", None) is not None and "dataset" in given:  # likewise only another dataset
        raise ValueError(f"--dataset {given['dataset']!r} names an embedded dataset, and --data was given: drop one")
    given["header"] = not getattr(args, "no_header", False)
    given["baselines"] = not getattr(args, "no_baselines", False)
    try:
        return SimulationSettings(**(given | changes))
    except SettingsError as exc:
        raise ValueError(exc.describe(flag_of)) from None


def depth_or_auto(text: str) -> int | str:
    """``auto`` or an integer; anything else is left for the settings to refuse by name."""
    try:
        return int(text)
    except ValueError:
        return text


def refuse_unused_partition_options(args: argparse.Namespace, partitions: Collection[str]) -> None:
    """Refuse ``--alpha`` (absent from ``args`` unless given) or ``edprf sweep``'s ``--alphas`` when no run splits its rows by a Dirichlet draw, and
    ``--column`` when no run splits them by a column's values: either would be ignored without a word.

    Raises
    ------
    ValueError
        ``--alpha`` given and ``dirichlet`` not among ``partitions``, or ``--column`` given and ``column`` not.
    """
    shown = ", ".join(partitions)
    if getattr(args, "alphas", None) and "dirichlet" not in partitions:  # edprf sweep's list of alphas
        raise ValueError(
            f"--alphas {','.join(f'{a:g}' for a in args.alphas)} are concentrations of the dirichlet partition, and "
            f"the partition here is {shown}: drop --alphas, or add dirichlet to --partitions"
        )
    if hasattr(args, "alpha") and "dirichlet" not in partitions:
        raise ValueError(
            f"--alpha {args.alpha:g} is the concentration of the dirichlet partition, and the partition here is "
            f"{shown}: drop --alpha, or ask for the dirichlet partition"
        )
    if getattr(args, "column", "") and "column" not in partitions:
        raise ValueError(
            f"--column {args.column!r} assigns rows to parties in the column partition, and the partition here is "
            f"{shown}: drop --column, or ask for the column partition"
        )


_ADDED_DEFAULT = " (default: %(default)s)"
"""How the help of an option with a default ends."""


class _Refused(argparse.Action):
    """An option the command does not take (hidden from its help): given, it is refused with the reason."""

    def __init__(self, option_strings: list[str], dest: str, why: str = "", **options: Any) -> None:
        options.update(help=argparse.SUPPRESS, default=argparse.SUPPRESS)  # a parser's argument_default too
        super().__init__(option_strings, dest, **options)
        self.why = why

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, *_: Any) -> None:
        raise argparse.ArgumentError(self, f"not an option of {parser.prog}: {self.why}")


def _option_adder(
    p: argparse.ArgumentParser, fixed: Mapping[str, str], one_value_of: Mapping[str, str]
) -> Callable[..., None]:
    """``p.add_argument``, refusing the options of ``fixed`` settings (hidden from the help) and turning the
    option of each setting in ``one_value_of`` into one value of its list (absent from the namespace unless
    given)."""

    def add(flag: str, **options: Any) -> None:
        setting = options.get("dest", flag.removeprefix("--").replace("-", "_"))
        if setting in fixed:
            nargs = 0 if options.get("action") == "store_true" else None
            p.add_argument(flag, action=_Refused, nargs=nargs, why=fixed[setting])
            return
        if setting in one_value_of:
            options["default"] = argparse.SUPPRESS
            options["help"] = (
                options["help"].removesuffix(_ADDED_DEFAULT)
                + f"; one value for {one_value_of[setting]} (give one of the two)"
            )
        p.add_argument(flag, **options)

    return add


def add_federation_arguments(
    p: argparse.ArgumentParser, *, fixed: Mapping[str, str] | None = None, one_value_of: Mapping[str, str] | None = None
) -> None:
    """The options of a simulated federation (``edprf simulate`` and ``edprf sweep``), defaults from the settings.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.
    fixed : mapping of str to str, optional
        Setting -> why the command sets it itself: its option is not in the help, and refused with that reason.
    one_value_of : mapping of str to str, optional
        Setting -> the flag of the command's list of its values (``{"epsilon": "--epsilons"}``): the setting's
        own option gives that list one value, and is left out of the namespace unless given.

    ``--alpha`` is left out of the namespace unless given (:func:`refuse_unused_partition_options`).
    """
    add = _option_adder(p, fixed or {}, one_value_of or {})
    add(
        "--data",
        type=Path,
        default=DEFAULTS.data,
        help="CSV (or Parquet) with the schema's columns and label (default: the embedded dataset)",
    )
    # --sep and --dataset are absent from the namespace unless given: given at their defaults, they are still
    # refused where they would be ignored (settings_from_args)
    add(
        "--sep",
        type=separator,
        default=argparse.SUPPRESS,
        help=f"field separator of --data, one character{_TAB} (default: {DEFAULTS.sep!r})",
    )
    add(
        "--no-header",
        action="store_true",
        help="--data has no header line: its columns are the schema's features in order, then the label",
    )
    add("--schema", type=Path, default=DEFAULTS.schema, help="schema TOML of --data (default: the embedded dataset's)")
    add(
        "--dataset",
        default=argparse.SUPPRESS,
        help=f"embedded dataset when --data is not given (default: {DEFAULTS.dataset})",
    )
    add("--parties", type=int, default=DEFAULTS.parties, help="simulated parties (default: %(default)s)")
    add(
        "--partition",
        choices=PARTITIONS,
        default=DEFAULTS.partition,
        help="how rows are split among parties: at random, label-skewed (Dirichlet --alpha), or by the "
        "values of --column (default: %(default)s)",
    )
    add(
        "--alpha",
        type=float,
        default=argparse.SUPPRESS,
        help=f"Dirichlet concentration of the dirichlet partition (default: {DEFAULTS.alpha:g})",
    )
    add("--column", default=DEFAULTS.column, help="column that assigns rows to parties (--partition column)")
    add(
        "--epsilon", type=float, default=DEFAULTS.epsilon, help="epsilon of each party's release (default: %(default)s)"
    )
    add(
        "--max-depth",
        type=depth_or_auto,
        default=DEFAULTS.max_depth,
        help="split levels per tree, or 'auto': each party chooses its depth (at most 12) from a DP "
        "count of its rows, charged within its epsilon (default: %(default)s)",
    )
    add(
        "--leaf",
        choices=LEAVES,
        default=DEFAULTS.leaf,
        help="what leaves release: noisy class counts (probabilities) or the paper's label (votes) "
        "(default: %(default)s)",
    )
    add(
        "--n-trees",
        type=int,
        default=DEFAULTS.n_trees,
        help="trees each party releases, a party's federated setting, unlike the central estimator's and edprf "
        "demo's 'auto': the coordinator asks every party for the same number, never chosen from row counts, and "
        "the federation's forest already holds one tree per party (default: %(default)s)",
    )
    add(
        "--n-bins",
        type=int,
        default=DEFAULTS.n_bins,
        help="bins of continuous features, the federated setting, unlike the central estimator's 'auto': every "
        "party's trees must share one grid to merge, so it is fixed for all of them (default: %(default)s)",
    )
    add(
        "--split-mode",
        choices=SPLIT_MODES,
        default=DEFAULTS.split_mode,
        help="binary (feature, threshold) splits or the paper's multiway splits (default: %(default)s)",
    )
    add(
        "--evaluation-epsilon",
        type=float,
        default=DEFAULTS.evaluation_epsilon,
        help="epsilon of each party's noised held-out metrics; 0 skips that round (default: %(default)s)",
    )
    add(
        "--evaluation-max-interval-width",
        type=float,
        default=DEFAULTS.evaluation_max_interval_width,
        help="skip the parties' evaluation (spending nothing) when its 95%% interval would be wider "
        "than this; 1 evaluates whatever the width (default: %(default)s)",
    )
    add(
        "--party-holdout",
        type=float,
        default=DEFAULTS.party_holdout,
        help="share of each party's rows kept for its own evaluation (default: %(default)s)",
    )
    add(
        "--test-size", type=float, default=DEFAULTS.test_size, help="central held-out test share (default: %(default)s)"
    )
    add(
        "--validation-size",
        type=float,
        default=DEFAULTS.validation_size,
        help="share of the training rows kept by the coordinator as its own validation data "
        "(contribution report, quality flags, selection); 0 disables (default: %(default)s)",
    )
    add(
        "--selective",
        action="store_true",
        help="selective aggregation: keep only parties whose trees raise validation accuracy",
    )
    add("--exclude-flagged", action="store_true", help="drop parties the quality test flags")
    add(
        "--tolerated-parties",
        type=int,
        default=DEFAULTS.tolerated_parties,
        metavar="F",
        help="hostile parties acting together the merge bounds (the run config's tolerated-parties): 2 holds two "
        "colluders, at a price under label skew (default: %(default)s)",
    )
    add(
        "--shuffle-labels-party",
        dest="shuffled_label_parties",
        metavar="SHUFFLE_LABELS_PARTY",
        type=int,
        action="append",
        default=list(DEFAULTS.shuffled_label_parties),
        help="research: give this party (0-based) shuffled labels, a low-quality party (repeatable)",
    )
    add(
        "--engine",
        choices=ENGINES,
        default=DEFAULTS.engine,
        help="simulation engine: 'in-process' calls the real ServerApp and ClientApps in this process, "
        "messages in Flower's wire form (fast, no Ray); 'ray' is Flower's simulation engine, what "
        "`flwr run` uses (about 10 s of start-up per run) (default: %(default)s)",
    )
    add(
        "--seed",
        type=int,
        default=DEFAULTS.seed,
        help="seed of the train/test split, the partition and the baselines; without --seeded-noise the parties "
        "hold out rows by a secret key of their own, so the baselines' training rows (the parties' training side) "
        "change from run to run: --party-holdout 0 or --seeded-noise fixes them (default: %(default)s)",
    )
    add(
        "--seeded-noise",
        action="store_true",
        help="research: parties draw their DP noise from seeds derived from --seed (reproducible, fast, "
        "NOT private against anyone who knows the seed); default: production randomness, "
        "exact samplers",
    )
