"""Read the data, split it among the simulated parties and write their workspace."""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from edprf_core.count_text import count_text

from ._progress import Progress, _quiet, file_text, stage
from ._settings import SettingsError, SimulationSettings

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from edprf_core import Schema
    from server import CoordinatorConfig

    from ._partition import Partitioning

__all__ = [
    "PreparedWorkspace",
    "RowSplit",
    "RowsRead",
    "check_release_size",
    "expected_training_rows",
    "held_out_rows_bound",
    "load_simulation_data",
    "partition_training_rows",
    "prepare_workspace",
    "read_simulation_data",
    "split_rows",
]


@dataclass(frozen=True)
class RowsRead:
    """What the simulation read of its data and what the schema's rules left out (the researcher's own file).

    read : int >= 0
        Rows in the file (or the embedded dataset).
    left_out : int in [0, read]
        Rows no party would use: refused by a rule of the schema (a missing cell whose rule is ``refuse``, a label
        not among the classes, ...).
    reasons : tuple of str
        One line per rule that left rows out, as ``edprf simulate`` prints them.
    test_rows, test_rows_repeated : int >= 0
        The central test rows, and those equal to a training row in every column and the label (the data's own
        duplicates: a test score on them is optimistic, a non-private forest's most).  0 before the split.
    """

    read: int
    left_out: int = 0
    reasons: tuple[str, ...] = ()
    test_rows: int = 0
    test_rows_repeated: int = 0

    @property
    def used(self) -> int:
        """The rows the test set and the parties were split from."""
        return self.read - self.left_out

    def text(self) -> str:
        """``"303 rows read, 6 left out by the schema's rules (...), 297 used"``, or ``"297 rows read, all used"``."""
        if not self.left_out:
            return f"{count_text(self.read, 'row')} read, all used"
        return (
            f"{count_text(self.read, 'row')} read, {self.left_out} left out by the schema's rules "
            f"({'; '.join(self.reasons)}), {self.used} used"
        )

    def repeats_text(self) -> str | None:
        """A note when more than :data:`REPEATED_TEST_SHARE` of the test rows repeat a training row, else None."""
        if not self.test_rows or self.test_rows_repeated <= REPEATED_TEST_SHARE * self.test_rows:
            return None
        return (
            f"{self.test_rows_repeated} of the {self.test_rows} central test rows "
            f"({100 * self.test_rows_repeated / self.test_rows:.1f}%) repeat a training row exactly (label included): "
            "the data holds duplicate rows, so every model's test score is optimistic, a non-private forest's most"
        )

    def to_dict(self) -> dict[str, object]:
        """For ``simulation.json``: every field, and :attr:`used`."""
        return {**asdict(self), "reasons": list(self.reasons), "used": self.used}


REPEATED_TEST_SHARE = 0.01
"""Share of the central test rows repeating a training row above which the simulation says so (review
rev-research R12: 5.6 % on the diabetes file, which holds 3,854 duplicate rows, went unsaid)."""


def repeated_rows(X_train: pd.DataFrame, y_train: pd.Series, X_test: pd.DataFrame, y_test: pd.Series) -> int:
    """How many rows of ``X_test``/``y_test`` equal a row of ``X_train``/``y_train`` in every column and the label."""
    import numpy as np
    import pandas as pd

    def hashes(X: pd.DataFrame, y: pd.Series) -> np.ndarray:
        return pd.util.hash_pandas_object(X.assign(**{"\0label": y.to_numpy()}), index=False).to_numpy()

    return int(np.isin(hashes(X_test, y_test), hashes(X_train, y_train)).sum())


@dataclass(frozen=True, eq=False)
class PreparedWorkspace:
    """The parties' workspace on disk and what the baselines need of the split.

    config : CoordinatorConfig
        The coordinator's run configuration (``config.sim_dir`` is the workspace).
    dataset : str
        The data's name (the file's name, or the embedded dataset's).
    schema : Schema
    partitioning : Partitioning
    X_train, y_train : the training rows (labels shuffled for ``shuffled_label_parties``), all parties'
    X_test, y_test : the central held-out test rows
    parts : list of integer arrays
        Row positions of ``X_train`` held by each party.
    rows_read : RowsRead
        What was read of the data and what the schema's rules left out.
    """

    config: CoordinatorConfig
    dataset: str
    schema: Schema
    partitioning: Partitioning
    X_train: pd.DataFrame
    y_train: pd.Series
    X_test: pd.DataFrame
    y_test: pd.Series
    parts: list[np.ndarray]
    rows_read: RowsRead | None = None

    @property
    def directory(self) -> Path:
        """The workspace: ``schema.toml``, ``test.csv`` and one directory per party."""
        return Path(self.config.sim_dir)


def load_simulation_data(
    settings: SimulationSettings, progress: Progress = _quiet
) -> tuple[pd.DataFrame, pd.Series, Schema, str]:
    """The rows, labels (as the declared classes), schema and name of the simulation's data.

    The simulation holds every party's rows: it applies the parties' per-record filter once, up front
    (the rows a party would drop), and says so through ``progress``.  :func:`read_simulation_data` also returns
    what was read and left out.
    """
    X, y, schema, name, _ = read_simulation_data(settings, progress)
    return X, y, schema, name


def read_simulation_data(
    settings: SimulationSettings, progress: Progress = _quiet
) -> tuple[pd.DataFrame, pd.Series, Schema, str, RowsRead]:
    """:func:`load_simulation_data`, and the :class:`RowsRead` of the data (a researcher reports the rows used)."""
    import numpy as np
    import pandas as pd

    from edprf_core import load_embedded, load_schema
    from edprf_core.datasets import read_csv
    from edprf_core.encoding import conforming_rows, encode_labels

    if settings.data is None:
        X, y, schema = load_embedded(settings.dataset)
        return X, y, schema, settings.dataset, RowsRead(len(X))
    schema = load_schema(settings.schema)
    with stage(progress, f"[1/4] reading {file_text(settings.data)} ...", "      read"):
        X, y = read_csv(settings.data, schema, sep=settings.sep, header=settings.header, labels="text")
    with stage(progress, f"      applying the schema's rules to {count_text(len(X), 'row')} ...", "      applied"):
        keep, problems = conforming_rows(X, y, schema)
    for note in problems:
        progress(f"      {note}; those rows are left out")
    if not keep.any():
        raise SettingsError(
            "{data} {path}: no row satisfies the schema's rules (check {sep}, {header} "
            "and the label's classes; `edprf schema check` shows what each rule does)",
            path=str(settings.data),
        )
    rows = RowsRead(len(X), int(len(X) - keep.sum()), tuple(problems))
    X, y = X[keep].reset_index(drop=True), y[keep].reset_index(drop=True)
    y = pd.Series(np.asarray(schema.classes)[encode_labels(y, schema)], name=schema.label.column)
    return X, y, schema, settings.data.name, rows


def prepare_workspace(settings: SimulationSettings, out_dir: Path, progress: Progress = _quiet) -> PreparedWorkspace:
    """Split the data, write the parties' directories under ``out_dir / "workspace"``, readable by their owner only.

    ``out_dir``, the workspace and its directories are created with mode 0700 and its files with mode 0600,
    whatever the umask: they hold copies of the input rows.

    Spends no epsilon: the parties spend theirs when the federation runs.  The simulation made the split,
    so its row counts are public here (unlike in a deployment).
    """
    out_dir = Path(out_dir)
    X, y, schema, name, rows_read = read_simulation_data(settings, progress)  # first: a wrong file fails first
    check_release_size(settings, schema)

    import numpy as np

    said = progress if settings.data is not None else _quiet  # a file's rows (the embedded data split at once)
    with stage(
        said, f"      splitting {count_text(len(X), 'row')} among the test set and the parties ...", "      split"
    ):
        split = split_rows(settings, X, y)
        X_train, y_train, X_test, y_test = split.X_train, split.y_train, split.X_test, split.y_test
        how, parts = partition_training_rows(settings, X_train, y_train)
    repeated = repeated_rows(X_train, y_train, X_test, y_test)  # before any party's labels are shuffled
    rows_read = replace(rows_read, test_rows=len(X_test), test_rows_repeated=repeated)
    if note := rows_read.repeats_text():
        progress(f"      note: {note}")
    y_train = y_train.copy()
    for p in settings.shuffled_label_parties:
        rows = parts[p]
        y_train.iloc[rows] = np.random.default_rng(settings.seed + 1000 + p).permutation(y_train.iloc[rows].to_numpy())
    step = "      " if settings.data is not None else "[1/4] "  # a file's [1/4] line was its reading line
    progress(
        f"{step}{name}: {len(X_train)} training rows split among {count_text(settings.parties, 'party', 'parties')} ({how.describe()}); "
        f"{len(X_test)} central test rows"
    )
    if settings.party_holdout > 0:
        progress(
            f"      each party holds out {100 * settings.party_holdout:g}% of its rows for its own evaluation (kept "
            "back even when that round is skipped): about "
            f"{expected_training_rows(len(X_train), settings.party_holdout)} rows to train on"
            + (", as many as the baselines fit on" if settings.baselines else "")
        )
    if settings.auto_depth:
        progress(f"      each party chooses its depth (at most {settings.depth_cap}) from a DP count of its rows")
    sim_dir = out_dir / "workspace"
    with (
        stage(progress, f"      writing the parties' workspace {sim_dir} ...", "      written"),
        _whole_or_gone(sim_dir),
    ):
        _write_parties(settings, sim_dir, schema, X_train, y_train, parts, X_test, y_test)
        if split.X_validation is not None:
            from ._workspace import write_owner_only_csv

            validation = split.X_validation.assign(**{schema.label.column: split.y_validation.to_numpy()})
            write_owner_only_csv(sim_dir / "validation.csv", validation)
    config = _coordinator_config(settings, sim_dir, out_dir, max(map(len, parts)), sum(map(len, parts)))
    return PreparedWorkspace(config, name, schema, how, X_train, y_train, X_test, y_test, parts, rows_read)


@contextmanager
def _whole_or_gone(sim_dir: Path) -> Iterator[None]:
    """The workspace the block writes is whole, or removed when writing fails (a full disk, a file-size limit).

    A part-written workspace holds copies of the input rows and serves no run: no party has been asked
    anything yet, so it holds no spent budget (the parties create their ledgers when first asked; a
    ``--seeded-noise`` run's are created here with their salt alone).  The error says where it was and whether
    it is gone; a workspace that could not be removed is named, so that its copies are not left unknown.
    """
    try:
        yield
    except OSError as exc:
        shutil.rmtree(sim_dir, ignore_errors=True)
        what = ": ".join(str(part) for part in (exc.filename, exc.strerror or exc) if part)
        fate = (
            f"it is still there, with copies of some of the rows (owner-only): remove it with rm -r {sim_dir}"
            if sim_dir.exists()
            else "the part written (copies of the rows) was removed"
        )
        failed = OSError(f"writing the parties' workspace {sim_dir} failed ({what}); {fate}")
        failed.errno = exc.errno  # one line on the CLI ("[Errno 28] ..." with the code as an argument)
        raise failed from exc


def check_release_size(settings: SimulationSettings, schema: Schema) -> None:
    """Refuse, before the parties are written, trees no simulated party's policy would release: their node
    bound (public parameters only) above the policy's ``max-release-nodes``.  Every party refused such a request
    after Flower had started, each refusal logged twice."""
    from client import PartyPolicy, release_node_bound

    limit = PartyPolicy.max_release_nodes
    nodes = release_node_bound(schema, settings.n_trees, settings.depth_cap, settings.split_mode, settings.n_bins)
    if nodes > limit:
        raise SettingsError(
            "{n_trees} {trees} of depth up to {depth} ({max_depth}) on {bins} bins, {split_mode} {mode}: a "
            "party's release may hold {nodes} nodes, above the parties' max-release-nodes {limit}; lower {n_trees} "
            "or {max_depth}",
            trees=settings.n_trees,
            depth=settings.depth_cap,
            bins=settings.n_bins,
            mode=settings.split_mode,
            nodes=f"{nodes:,}",
            limit=f"{limit:,}",
        )


class RowSplit(NamedTuple):
    """The simulation's rows split as a run splits them: training rows (all parties'), the central test rows,
    and the coordinator's validation rows (None with ``validation_size`` 0)."""

    X_train: pd.DataFrame
    y_train: pd.Series
    X_test: pd.DataFrame
    y_test: pd.Series
    X_validation: pd.DataFrame | None
    y_validation: pd.Series | None


def split_rows(settings: SimulationSettings, X: pd.DataFrame, y: pd.Series) -> RowSplit:
    """Split the rows into training, central test and validation rows (stratified, seeded by ``settings.seed``).

    Raises
    ------
    SettingsError
        A class has fewer than 2 rows, or a split would hold fewer rows than there are classes: a stratified split
        cannot keep every class on both sides.  Refused rather than split unstratified: the central test rows are
        where the simulation's metrics (and the baselines' comparison) are measured, and a class held on one side
        only would be either never trained on or never tested, without a word in the report.
    """
    X_train, X_test, y_train, y_test = _stratified(X, y, settings.test_size, settings.seed, "test_size", "the data")
    if settings.validation_size <= 0:
        return RowSplit(X_train, y_train, X_test, y_test, None, None)
    X_train, X_val, y_train, y_val = _stratified(
        X_train, y_train, settings.validation_size, settings.seed + 1, "validation_size", "the training rows"
    )
    return RowSplit(X_train, y_train, X_test, y_test, X_val, y_val)


_SPLIT_OF = {"test_size": "training and central test rows", "validation_size": "training and validation rows"}


def _stratified(
    X: pd.DataFrame, y: pd.Series, size: float, seed: int, setting: str, rows: str
) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series, pd.Series]:
    """``train_test_split(X, y, test_size=size, stratify=y)``, its refusals named with the ``setting`` that asks for
    it (a :class:`SettingsError`) and what to do."""
    from sklearn.model_selection import train_test_split

    def refuse(why: str, fix: str) -> SettingsError:
        """``why`` is text (class names, sklearn's words: braces escaped); ``fix`` a template naming settings."""
        why = why.replace("{", "{{").replace("}", "}}")
        return SettingsError(
            f"the split into {_SPLIT_OF[setting]} ({{{setting}}} {size:g}) is stratified: every class keeps its "
            f"share on both sides; {why}: {fix}"
        )

    counts = y.value_counts(sort=True, ascending=True)
    rare = counts[counts < 2]
    if len(rare):
        shown = ", ".join(f"{c!r} ({count_text(int(n), 'row')})" for c, n in rare.items())
        several = len(rare) > 1
        raise refuse(
            f"{'classes' if several else 'class'} {shown} of {rows} {'have' if several else 'has'} fewer than the 2 "
            "rows this needs",
            f"add rows of {'those classes' if several else 'that class'}, or leave {'them' if several else 'it'} out "
            "of the data and of the schema's classes",
        )
    held = math.ceil(size * len(y))  # as sklearn sizes the held-out side
    fix = f"change {{{setting}}} so that both sides hold a row of every class, or add rows"
    classes = count_text(len(counts), "class", "classes")
    if min(held, len(y) - held) < len(counts):
        raise refuse(
            f"of the {count_text(len(y), 'row')} of {rows}, {held} would be held out and "
            f"{len(y) - held} kept, for {classes}",
            fix,
        )
    try:
        return train_test_split(X, y, test_size=size, random_state=seed, stratify=y)
    except ValueError as exc:  # sklearn's own count of a side (rounded otherwise): its words
        raise refuse(f"{str(exc).rstrip('.')} ({count_text(len(y), 'row')} of {rows}, {classes})", fix) from None


def partition_training_rows(
    settings: SimulationSettings, X_train: pd.DataFrame, y_train: pd.Series
) -> tuple[Partitioning, list[np.ndarray]]:
    """How the training rows go to the parties, and each party's row positions.

    Raises
    ------
    ValueError
        The rows cannot be split so (fewer rows than parties, a ``column`` with fewer values than parties...).
    """
    import numpy as np

    from ._partition import Partitioning, partition_rows

    how = Partitioning(settings.partition, settings.alpha, settings.column)
    return how, partition_rows(X_train, y_train, settings.parties, how, np.random.default_rng(settings.seed))


def _write_parties(
    settings: SimulationSettings,
    sim_dir: Path,
    schema: Schema,
    X_train: pd.DataFrame,
    y_train: pd.Series,
    parts: list[np.ndarray],
    X_test: pd.DataFrame,
    y_test: pd.Series,
) -> None:
    """Each party's data and policy: a lifetime cap of exactly one release and one evaluation."""
    from client import MICRO, micro_epsilon

    from ._workspace import write_workspace

    cap_units = micro_epsilon(settings.epsilon) + (
        micro_epsilon(settings.evaluation_epsilon) if settings.evaluation_epsilon else 0
    )
    policy = {
        "lifetime_epsilon_cap": cap_units / MICRO,
        "min_epsilon": min(0.01, settings.epsilon, settings.evaluation_epsilon or 0.01),
        "max_release_epsilon": settings.epsilon,
        "max_evaluation_epsilon": settings.evaluation_epsilon,
        "max_depth": settings.depth_cap,
        "max_n_trees": settings.n_trees,
        "allow_seeded_randomness": settings.seeded_noise,
        "holdout_fraction": settings.party_holdout,
    }
    write_workspace(
        sim_dir,
        schema,
        X_train,
        y_train,
        parts,
        X_test,
        y_test,
        policy,
        research_seed=settings.seed if settings.seeded_noise else None,
    )


def _coordinator_config(
    settings: SimulationSettings, sim_dir: Path, out_dir: Path, largest_party: int, all_rows: int
) -> CoordinatorConfig:
    """The coordinator's run config; the simulation made the split, so the parties' sizes are public here.

    ``consortium_rows`` (the size the marginals part's share and grid rules read) is the parties' expected
    training rows: all their rows less the expected held-out share.
    """
    from server import CoordinatorConfig

    return CoordinatorConfig(
        sim_dir=str(sim_dir),
        output_dir=str(out_dir),
        epsilon=settings.epsilon,
        max_depth=settings.depth_cap,
        depth_rule="auto" if settings.auto_depth else "fixed",
        leaf=settings.leaf,
        n_trees=settings.n_trees,
        split_mode=settings.split_mode,
        n_bins=settings.n_bins,
        seed=settings.seed if settings.seeded_noise else -1,
        min_parties=1,
        readiness_check=False,  # min-parties 1 and fresh ledgers: every party would serve
        require_exact_sampling=not settings.seeded_noise,  # seeded noise is drawn by numpy
        evaluation_epsilon=settings.evaluation_epsilon if settings.party_holdout > 0 else 0.0,
        max_party_rows=held_out_rows_bound(largest_party, settings.party_holdout),
        consortium_rows=expected_training_rows(all_rows, settings.party_holdout),
        evaluation_max_interval_width=settings.evaluation_max_interval_width,
        selective_aggregation=settings.selective,
        exclude_flagged=settings.exclude_flagged,
        tolerated_parties=settings.tolerated_parties,
    )


def expected_training_rows(rows: int, holdout: float) -> int:
    """The rows a party with ``rows`` rows is expected to train on: all of them less its held-out share, at least 1.

    Each row is held out independently with probability ``holdout`` (a keyed draw inside the party), so this
    is the mean of the party's training rows, not its exact count; the coordinator's ``consortium_rows`` is this
    over all parties' rows, and the baselines fit on this many rows (:func:`train_baselines`).
    """
    return max(1, round(rows * (1.0 - holdout)))


def held_out_rows_bound(rows: int, holdout: float) -> int:
    """The simulation's public bound on a party's held-out rows: its share plus 5 binomial standard deviations.

    The simulation made the split, so a party's row count is public here; each row is held out
    independently with probability ``holdout`` (a keyed draw), so the held-out count exceeds this
    with probability below 3e-7.
    """
    mean = rows * holdout
    return math.ceil(mean + 5.0 * math.sqrt(mean * (1.0 - holdout))) + 1
