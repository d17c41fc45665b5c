"""``edprf demo``: train and evaluate one DP forest centrally on an embedded dataset.

The forest is :class:`edprf_core.EDPRFClassifier` with the library's defaults (its recommended configuration):
trees, depth and bins ``"auto"``, chosen from a DP count of the training rows charged within epsilon.  The
federation commands (``simulate``, ``sweep``, ``consortium``) default instead to a party's federated settings.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from contextlib import ExitStack
from pathlib import Path

from ._arg_types import (
    CLI_DEPTH_LIMIT,
    MAX_SKLEARN_SEED,
    depth_or_auto,
    embedded_datasets,
    integer,
    integer_or_auto,
    positive_finite,
)

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    from ._exit_text import exit_epilog

    p = sub.add_parser(
        "demo",
        epilog=exit_epilog(
            "0 trained and evaluated (with --output: the model and test rows written); 1 an error (an output exists without --force, a file cannot be written)"
        ),
        help="train a DP forest on an embedded dataset and compare with a non-private forest",
        description="Train a DP forest centrally on an embedded dataset and compare its held-out accuracy with a "
        "non-private scikit-learn forest's.  Its defaults are the estimator's (EDPRFClassifier: trees, depth and "
        "bins 'auto', the recommended configuration); the federation commands default to a party's settings.",
    )
    datasets = embedded_datasets()
    p.add_argument(
        "--dataset",
        default="wall_robot_navigation",
        choices=datasets or None,  # none found (an unusual install): the handler names the shipped ones
        help="embedded dataset (default: %(default)s)",
    )
    p.add_argument(
        "--epsilon",
        type=positive_finite,
        default=1.0,
        help="privacy budget per record, a positive finite number (default: %(default)s)",
    )
    p.add_argument(
        "--n-trees",
        type=integer_or_auto(1),
        default="auto",
        help="number of trees, >= 1, or 'auto': one tree unless the training rows support more, by the estimator's "
        "rule on a DP count of the rows, within epsilon (default: %(default)s)",
    )
    p.add_argument(
        "--max-depth",
        type=depth_or_auto,
        default="auto",
        help=f"split levels per tree (1 to {CLI_DEPTH_LIMIT}), or 'auto': the public-depth rule on a DP count of the "
        "training rows, within epsilon (default: %(default)s)",
    )
    p.add_argument(
        "--n-bins",
        type=integer_or_auto(2),
        default="auto",
        help="equal-width bins of continuous features, >= 2, or 'auto': by the estimator's rule on the same DP count "
        "(3 bins for a few hundred rows, 10 for a few thousand, 20 above n*epsilon = 8,000) (default: %(default)s)",
    )
    p.add_argument(
        "--split-mode",
        choices=("binary", "multiway"),
        default="binary",
        help="binary (feature, threshold) splits or the paper's multiway splits (default: %(default)s)",
    )
    p.add_argument(
        "--seed",
        type=integer(0, MAX_SKLEARN_SEED),
        default=None,
        help=f"fixed seed in [0, {MAX_SKLEARN_SEED}] for a reproducible research run "
        "(default: cryptographic randomness)",
    )
    p.add_argument(
        "--output",
        type=Path,
        default=None,
        metavar="DIR",
        help="also write the DP forest as DIR/global-model.edprf (the file edprf predict, evaluate, explain, inspect "
        "and export read: one central, unsigned release, fitted as a party fits one: without the marginals part's "
        "residual pass) and the held-out rows as DIR/test.csv, and print the "
        "edprf predict command to try on them (the directory is created; existing files are refused)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.output is None:
        return _demo(args, None)
    with ExitStack() as held:
        return _demo(args, _output_files(args.output, held))  # refused before any work


def _demo(args: argparse.Namespace, outputs: tuple[Path, Path] | None) -> int:
    """The demonstration, writing the model and the held-out rows to ``outputs`` when given."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import train_test_split

    from edprf_core import EDPRFClassifier, SeededNoiseWarning, load_embedded
    from edprf_core.count_text import count_text
    from edprf_core.forest import large_epsilon_note
    from edprf_fl.simulation import dataset_note, raw_features

    say = lambda msg: print(msg, file=sys.stderr, flush=True)
    X, y, schema = load_embedded(args.dataset)
    split_seed = 0 if args.seed is None else args.seed
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=split_seed, stratify=y)
    say(
        f"[1/3] {args.dataset}: {len(X_train)} training rows, {len(X_test)} test rows, schema {schema.fingerprint[:19]}"
    )
    # 'auto': the estimator's rule, which reads the row count through a DP count charged within epsilon (the exact
    # count of the training rows would make the trees' shape depend on them, and the guarantee printed below would
    # not hold as stated)
    start = time.perf_counter()
    clf = EDPRFClassifier(
        schema,
        epsilon=args.epsilon,
        n_trees=args.n_trees,
        max_depth=args.max_depth,
        n_bins=args.n_bins,
        split_mode=args.split_mode,
        random_state=args.seed,
        # a model file holds releases, which carry histograms only: no residual pass (a federation's fit)
        residual_pass="auto" if outputs is None else False,
    )
    with warnings.catch_warnings():  # --seed asks for it; the guarantee printed below says NOT DP and why
        warnings.simplefilter("ignore", SeededNoiseWarning)
        clf.fit(X_train, y_train)
    fit_s = time.perf_counter() - start
    trees = count_text(clf.n_trees_, "tree")
    automatic = [name for name in ("n_trees", "max_depth", "n_bins") if getattr(args, name) == "auto"]
    chosen = f"; {', '.join(automatic)} chosen from a DP count of the rows" if automatic else ""
    if outputs is not None:
        chosen += "; no residual pass, as a party's release (--output)"
    say(
        f"[2/3] DP forest trained in {fit_s:.2f} s ({trees}, depth {clf.max_depth_}, {clf.n_bins_} bins, "
        f"{count_text(clf.forest_.trees.n_nodes, 'node')}{chosen})"
    )
    ours = clf.score(X_test, y_test)
    # the reference reads the raw features (as simulate's does): the DP model's parts read two grids (the trees'
    # bins, and the marginals part's own), so "the same bins" named neither; the majority class says what a
    # constant scores (on imbalanced data, accuracy alone says little)
    raw_train, raw_test = raw_features(X_train, schema), raw_features(X_test, schema)
    reference = RandomForestClassifier(n_estimators=100, max_depth=None, random_state=split_seed, n_jobs=-1)
    reference.fit(raw_train, y_train)
    majority = y_train.value_counts().idxmax()
    say("[3/3] non-private reference forest trained")
    print(
        f"dataset:               {args.dataset} ({count_text(schema.n_classes, 'class', 'classes')}, "
        f"{count_text(schema.n_features, 'feature')})"
    )
    print(
        f"DP forest accuracy:    {ours:.4f}  ({trees}, depth {clf.max_depth_}, {clf.n_bins_} bins, "
        f"{args.split_mode} splits)"
    )
    print(f"non-private accuracy:  {reference.score(raw_test, y_test):.4f}  (scikit-learn, 100 trees, raw features)")
    print(f"majority class:        {float((y_test == majority).mean()):.4f}  (always {majority!r})")
    for line in _ranking_lines(clf, reference, raw_test, X_test, y_test, schema):
        print(line)
    print(f"guarantee:             {clf.forest_.guarantee()}")
    if (large := large_epsilon_note(args.epsilon)) and not clf.forest_.dp:  # a DP guarantee ends with it
        print(f"note: {large}")
    print(f"note: {dataset_note(args.dataset)}" if dataset_note(args.dataset) else "")
    if outputs is not None:
        for line in _write_outputs(clf, X_test, y_test, schema, args.dataset, outputs):
            print(line)
    return 0


MODEL_NAME = "global-model.edprf"
"""The model's file name under ``--output`` (a federation's name for it: what the docs' commands read)."""

TEST_NAME = "test.csv"
"""The held-out rows' file name under ``--output`` (features and label)."""


DEMO_LOCK = ".edprf-output.lock"
"""The lock file in ``--output`` while a demo writes there (removed at its end): its pid; ``edprf simulate``'s too
(:data:`edprf_fl.cli._simulate.SIMULATE_LOCK`), as both write ``global-model.edprf``."""


def _output_files(directory: Path, held: ExitStack) -> tuple[Path, Path]:
    """The model and test files under ``directory``, refused when either exists or another ``edprf demo`` holds it.

    ``directory`` and each missing parent are created with mode 0700 whatever the umask (an existing one keeps its
    mode), as every command's outputs are (:func:`protocol.make_owner_only_dirs`): under a permissive umask another
    account could otherwise replace the model that ``edprf predict`` then reads (review rev-pkg P13).  It is held
    (:func:`edprf_fl.hold_directory`) until ``held`` closes, and looked at once held: two demos started together on
    one directory no longer both write there (review rev-auto A1).
    """
    from edprf_fl import hold_directory
    from protocol import make_owner_only_dirs

    if directory.exists() and not directory.is_dir():
        raise ValueError(f"--output {directory}: not a directory")
    make_owner_only_dirs(directory)

    def refusal(who: str) -> str:
        return (
            f"--output {directory} is in use by another edprf command ({who}); wait for it or choose another directory"
        )

    held.enter_context(
        hold_directory(
            directory, DEMO_LOCK, refusal, f"edprf demo --output {directory}", remove=True, make=make_owner_only_dirs
        )
    )
    files = (directory / MODEL_NAME, directory / TEST_NAME)
    for path in files:
        if path.exists() or path.is_symlink():
            raise ValueError(_exists_text(path))
    return files


def _exists_text(path: Path) -> str:
    return f"--output: {path} exists; remove it or choose another directory"


def _ranking_lines(clf, reference, raw_test, X_test, y_test, schema) -> list[str]:
    """Balanced accuracy and ROC AUC, with 95% intervals for the DP forest, beside the non-private forest's and the
    majority class's (accuracy alone says little on imbalanced data: bank_marketing is 88% 'no')."""
    from edprf_core.metrics import clinical_report

    ours = clinical_report(y_test.to_numpy(), clf.predict_proba(X_test), clf.classes_)
    theirs = clinical_report(y_test.to_numpy(), reference.predict_proba(raw_test), reference.classes_)
    k = schema.n_classes
    auc = f"ROC AUC ({schema.classes[-1]!r}):" if k == 2 else "ROC AUC (macro):"
    constant = "a constant ranks no row above another"
    share = float(y_test.value_counts(normalize=True).max())
    lines = [
        (
            f"balanced accuracy:     DP forest {ours.balanced_accuracy.text()}, non-private "
            f"{theirs.balanced_accuracy.value:.3f}, majority class {1 / k:.3f} (it recalls one class of {k})"
        ),
        (
            f"{auc:<23}DP forest {ours.roc_auc.text()}, non-private {theirs.roc_auc.value:.3f}, majority class 0.500 "
            f"({constant})"
        ),
    ]
    if share >= 0.7:
        lines.append(
            f"note: {share:.0%} of the test rows are of one class: the majority class scores {share:.4f} accuracy; "
            "judge the forest by balanced accuracy and ROC AUC"
        )
    return lines


def _write_outputs(clf, X_test, y_test, schema, dataset: str, files: tuple[Path, Path]) -> list[str]:
    """Write the DP forest as a one-release global model and the held-out rows, each with mode 0600 whatever the
    umask, as ``edprf predict -o`` writes: to temporary files beside them, then both moved (neither replaces a
    file); the lines that say so."""
    import shlex

    from protocol import (
        INSPECTION_POLICY,
        PendingFile,
        build_global_model,
        commit_together,
        decode_release,
        encode_release,
    )

    model_path, test_path = files
    release = encode_release(clf.forest_, "demo-central", allow_non_dp=not clf.forest_.dp, run_id=f"demo-{dataset}")
    verified = decode_release(release, schema, INSPECTION_POLICY)
    model_bytes = build_global_model(schema, [verified], {"run_id": f"demo-{dataset}", "demo": dataset})
    test = X_test.copy()
    test[schema.label.column] = y_test.to_numpy()
    pending: list[PendingFile] = []
    try:  # both written, then both moved: the pair comes from this run, and a file written meanwhile stays
        for path in files:
            pending.append(PendingFile(path, replace=False))
        pending[0].open(binary=True).write(model_bytes)
        test.to_csv(pending[1].open(), index=False)
        commit_together(pending)
    except FileExistsError as exc:
        if exc.filename not in {str(path) for path in files}:
            raise
        raise ValueError(_exists_text(Path(exc.filename))) from None
    finally:
        for file in pending:
            file.discard()  # a temporary file a failure left (the moved ones are gone already)
    model, data = shlex.quote(str(model_path)), shlex.quote(str(test_path))
    predictions = shlex.quote(str(model_path.parent / "predictions.csv"))
    return [
        (
            f"model written:         {model_path} (the DP forest as one central, unsigned release); held-out rows: "
            f"{test_path}"
        ),
        f"try:                   edprf predict {model} {data} -o {predictions}",
        f"                       edprf evaluate {model} {data}",
    ]
