"""The row assignment a party's fit consumed, recorded at its consumers (not where it is drawn).

A party's fit sends each row to one tree (``sample_tree`` / ``sample_rows``, the arguments of
:func:`edprf_core._builder.build_forest`) or, with a marginals part, to the marginals histograms (the rows
:func:`edprf_core._marginals.release_marginals` receives).  :class:`AssignmentRecorder` wraps those two
consumers as the fit binds them (``edprf_core._classifier``) and the fit itself (its input rows), so what
is recorded is what the release was computed from, whatever code drew it: a change that bypasses
``ParallelComposition.assign_rows`` or ``marginals_rows`` is still seen.

Which input row a consumer got is read from the row's content: the party's data holds only DISTINCT
encoded rows (:func:`distinct_rows_csv`, every (age bin, code, grade, label) of the harness schema once),
so a row's codes and label name its position in the fit's input.  That gives, per fit, the tree of every
input position and the marginals mask by position (:class:`Consumed`).
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

import client._party as party_module
import edprf_core._classifier as classifier
import edprf_core._randomness as randomness
from edprf_core import load_schema
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels

from ..federation._neighbours import HEADER, make_party
from ._party_requests import TrainSettings, release_of, send_train

__all__ = ["AGE_BINS", "AssignmentRecorder", "Consumed", "distinct_rows_csv", "entropy_party"]

AGE_BINS = 8
"""The trees' (and the marginals') grid: 8 age bins x 3 codes x 3 grades x 2 labels = 144 distinct rows."""

_CODES = ("007", "12", "other")
_GRADES = (1, 2, 3)


def distinct_rows_csv(n_rows: int, seed: int = 0) -> bytes:
    """``n_rows`` (at most 144) pairwise distinct rows of the harness schema, in a fixed shuffled order.

    Ages sit at the centres of the schema's 8 equal-width bins over [0, 100], so on the 8-bin grid no two
    rows share their codes and label.
    """
    combos = list(itertools.product(range(AGE_BINS), _CODES, _GRADES, (0, 1)))
    assert n_rows <= len(combos)
    order = np.random.default_rng(seed).permutation(len(combos))[:n_rows]
    width = 100.0 / AGE_BINS
    lines = [HEADER]
    for i in order:
        age_bin, code, grade, label = combos[i]
        lines.append(f"{(age_bin + 0.5) * width},{code},{grade},{label}".encode())
    return b"\n".join(lines) + b"\n"


def entropy_party(directory: Path, n_rows: int):
    """A production party (no seed allowed, no held-out rows: the fit reads every row of the file, in file order)
    on ``n_rows`` distinct rows, with a ledger cap for many requests."""
    return make_party(
        directory,
        distinct_rows_csv(n_rows),
        allow_seeded_randomness=False,
        holdout_fraction=0.0,
        lifetime_epsilon_cap=1e6,
    )


@dataclass(frozen=True)
class Consumed:
    """What one fit used, by input position.

    Attributes
    ----------
    tree_of : ndarray of int, shape (n_rows,)
        The tree the row was grown in; -1 for a row the marginals got.
    to_marginals : ndarray of bool, shape (n_rows,)
        The row was in the marginals histograms' input.
    n_trees : int
        The number of trees grown (tree generators handed to ``build_forest``).
    params : TrainingParameters
        The released parameters (to check the request ran on the production path).
    """

    tree_of: NDArray[np.intp]
    to_marginals: NDArray[np.bool_]
    n_trees: int
    params: object


def _bound(real, args, kwargs) -> dict:
    return dict(inspect.signature(real).bind(*args, **kwargs).arguments)


def _positions(codes, labels, index: dict) -> NDArray[np.intp]:
    rows = np.column_stack([np.asarray(codes), np.asarray(labels)]).tolist()
    return np.array([index[tuple(r)] for r in rows], dtype=np.intp)


class AssignmentRecorder:
    """Records, per train request, the fit's input rows and what ``build_forest`` and ``release_marginals`` got."""

    def __init__(self) -> None:
        self._fits: list[dict] = []
        self._builds: list[dict] = []
        self._marginals: list[dict] = []
        self.entropy_requests: list[int] = []
        """The bit counts of every ``secrets.randbits`` call the fits made through ``edprf_core._randomness``."""

    @property
    def fits(self) -> list[dict]:
        """Per fit, the rows it received: ``X`` and ``y``."""
        return self._fits

    @property
    def builds(self) -> list[dict]:
        """Per ``build_forest`` call, what it got: ``codes``, ``labels``, ``sample_tree``, ``sample_rows``, ..."""
        return self._builds

    def install(self, monkeypatch) -> AssignmentRecorder:
        real_fit = party_module.EDPRFClassifier.fit
        real_build, real_release = classifier.build_forest, classifier.release_marginals

        def fit(estimator, X, y):
            self._fits.append({"X": X.copy(), "y": np.asarray(y).copy()})
            return real_fit(estimator, X, y)

        def build(*args, **kwargs):
            a = _bound(real_build, args, kwargs)
            self._builds.append(
                {
                    "codes": np.array(a["codes"], copy=True),
                    "labels": np.array(a["y"], copy=True),
                    "n_codes": tuple(a["grid"].n_codes),
                    "sample_tree": np.array(a["sample_tree"], copy=True),
                    "sample_rows": np.array(a["sample_rows"], copy=True),
                    "n_trees": len(a["tree_generators"]),
                }
            )
            return real_build(*args, **kwargs)

        def release(*args, **kwargs):
            a = _bound(real_release, args, kwargs)
            self._marginals.append(
                {
                    "codes": np.array(a["codes"], copy=True),
                    "labels": np.array(a["y"], copy=True),
                    "n_codes": tuple(a["n_codes"]),
                }
            )
            return real_release(*args, **kwargs)

        monkeypatch.setattr(party_module.EDPRFClassifier, "fit", fit)
        monkeypatch.setattr(classifier, "build_forest", build)
        monkeypatch.setattr(classifier, "release_marginals", release)
        return self

    def watch_entropy(self, monkeypatch, randbits) -> None:
        """Route ``secrets.randbits`` through ``randbits`` (the real one or a stand-in), recording each call's bit
        count.  The attribute is set on the ``secrets`` module itself, process-wide for the test (``monkeypatch``
        restores it): ``edprf_core._randomness`` is its only caller in the project."""

        def recorded(k: int) -> int:
            self.entropy_requests.append(k)
            return randbits(k)

        monkeypatch.setattr(randomness.secrets, "randbits", recorded)

    def serve(self, setup, settings: TrainSettings, request_id: str) -> Consumed:
        """Serve one train request through the party's Flower handler; return what its fit consumed."""
        for recorded in (self._fits, self._builds, self._marginals):
            recorded.clear()
        release = release_of(setup, send_train(setup, settings, request_id=request_id))
        params = release.params
        assert len(self._fits) == 1, "one fit per request"
        assert len(self._builds) == 1, "the fit must grow its trees through build_forest, once"
        assert len(self._marginals) == (1 if params.marginals_share > 0 else 0), "one marginals release, if asked"
        (fit,), (build,) = self._fits, self._builds
        schema = load_schema(setup.schema_path)
        labels = encode_labels(fit["y"], schema)
        n_rows = labels.shape[0]

        def index(n_codes: tuple[int, ...], n_bins: int) -> dict:
            grid = FeatureGrid.from_schema(schema, n_bins)
            assert tuple(grid.n_codes) == n_codes
            rows = np.column_stack([encode_features(fit["X"], schema, grid), labels]).tolist()
            found = {tuple(r): i for i, r in enumerate(rows)}
            assert len(found) == n_rows, "the harness's rows must be distinct on the grid (they name positions)"
            return found

        tree_part = _positions(build["codes"], build["labels"], index(build["n_codes"], params.n_bins))
        to_marginals = np.zeros(n_rows, dtype=bool)
        marginals_part = np.empty(0, dtype=np.intp)
        if self._marginals:
            (marg,) = self._marginals
            at = index(marg["n_codes"], params.marginals_bins)
            marginals_part = _positions(marg["codes"], marg["labels"], at)
            to_marginals[marginals_part] = True
        # parallel composition: every input row feeds exactly one part, and within the trees exactly one tree
        assert np.array_equal(np.sort(np.concatenate([tree_part, marginals_part])), np.arange(n_rows))
        sample_tree, sample_rows = build["sample_tree"], build["sample_rows"]
        assert np.array_equal(np.sort(sample_rows), np.arange(tree_part.size)), "each tree row in exactly one tree"
        assert sample_tree.shape == sample_rows.shape
        assert np.all((sample_tree >= 0) & (sample_tree < build["n_trees"]))
        tree_of = np.full(n_rows, -1, dtype=np.intp)
        tree_of[tree_part[sample_rows]] = sample_tree
        return Consumed(tree_of, to_marginals, build["n_trees"], params)
