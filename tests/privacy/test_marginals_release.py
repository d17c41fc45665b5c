"""ε by instrumentation for the DP one-way marginals (``edprf_core._marginals.release_marginals``).

The exact path (``rng=None``) is recorded at our mechanism API and at OpenDP's C entry point
(:mod:`._instrumentation`); :func:`._instrumentation.account_marginals` rebuilds the ε one record
faces from the noise OpenDP really drew and the TRUE sensitivity of a histogram (1 under
add-remove, 2 under replace-one), never from what the code declared.  A release of ``d``
histograms must make exactly ``d`` measured releases, each on the rows' exact histogram, each
costing exactly ``epsilon / d``, the total ``epsilon``, and release what OpenDP drew.

Then weakened copies of the release (applied before the recorder, as a change to the source
would be) must each be refused, for its own reason: less noise behind an honest-looking privacy
map, one histogram at the full ε, one histogram without noise, noise drawn and dropped, counts
scaled before the noise, an extra uncharged draw, the research sampler on the production path,
and the add-remove sensitivity used under replace-one.
"""

from __future__ import annotations

import numpy as np
import pytest

import edprf_core._marginals as marginals_module
from edprf_core._marginals import release_marginals

from ._audit import opendp_noise_scaled
from ._instrumentation import AccountingError, Recorder, TrueSensitivity, account_marginals

pytestmark = pytest.mark.privacy

EXACT = 1e-9
"""Relative agreement of the rebuilt ε with the budget (the sampler inflates scales by 1e-12)."""

N_CODES = (3, 5, 2, 4)
N_CLASSES = 3


def _rows(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, k, size=n) for k in N_CODES])
    return codes, rng.integers(0, N_CLASSES, size=n)


def _release(monkeypatch, epsilon: float = 1.0, relation: str = "add-remove", n_codes=N_CODES, weaken=None):
    """Record one exact release; ``weaken(monkeypatch)``, if given, runs once the recorder is installed."""
    codes, y = _rows()
    codes = codes[:, : len(n_codes)]
    recorder = Recorder().install(monkeypatch)
    if weaken is not None:
        weaken(monkeypatch)
    released = release_marginals(codes, y, n_codes, N_CLASSES, epsilon, relation=relation)  # exact sampler
    return recorder.take(), released, codes, y


@pytest.mark.parametrize("relation", ["add-remove", "replace-one"])
@pytest.mark.parametrize(("epsilon", "n_codes"), [(1.0, N_CODES), (0.3, N_CODES[:1]), (5.0, N_CODES[:3])])
def test_each_histogram_is_one_release_at_its_share_and_the_total_is_epsilon(monkeypatch, relation, epsilon, n_codes):
    calls, released, codes, y = _release(monkeypatch, epsilon, relation, n_codes)
    d = len(n_codes)
    assert len(calls) == d and all(c.api == "discrete_laplace_counts" for c in calls)
    assert all(len(c.draws) == 1 and c.draws[0].constructor == "make_laplace" for c in calls)  # one measurement each
    truth = TrueSensitivity(relation)
    for call in calls:
        assert call.real_epsilons(truth.leaf_counts, True)[0] == pytest.approx(epsilon / d, rel=EXACT)
    total = account_marginals(calls, released, codes, y, truth)
    assert total <= epsilon * (1 + 1e-12) and total == pytest.approx(epsilon, rel=EXACT)


def test_an_empty_dataset_still_draws_every_cell(monkeypatch):
    recorder = Recorder().install(monkeypatch)
    codes, y = np.zeros((0, len(N_CODES)), np.int64), np.zeros(0, np.int64)
    released = release_marginals(codes, y, N_CODES, N_CLASSES, 1.0)
    calls = recorder.take()
    assert [c.draws[0].n_values for c in calls] == [k * N_CLASSES for k in N_CODES]
    assert account_marginals(calls, released, codes, y) == pytest.approx(1.0, rel=EXACT)


# ------------------------------------------------------------------ the checker refuses weakened releases
# Two places to weaken.  Inside the mechanism (applied before the recorder, which then wraps the weakened
# function): the call still declares epsilon / d and the recorder sees what it really drew.  In
# ``release_marginals`` itself (applied after the recorder, so that the recorded call is what the weakened
# code handed the mechanism), as a change to its source would be.
def _identity(counts, epsilon, sensitivity=1, rng=None):
    return np.asarray(counts, dtype=np.int64)


def _on_call(monkeypatch, index: int, change) -> None:
    """Replace the release's ``index``-th histogram draw by ``change(real, counts, epsilon, sensitivity, rng)``."""
    real = marginals_module.discrete_laplace_counts
    seen = [0]

    def counts_noise(counts, epsilon, sensitivity=1, rng=None):
        seen[0] += 1
        if seen[0] - 1 == index:
            return change(real, counts, epsilon, sensitivity, rng)
        return real(counts, epsilon, sensitivity, rng)

    monkeypatch.setattr(marginals_module, "discrete_laplace_counts", counts_noise)


def _mechanism_skips_the_noise(monkeypatch):
    """Inside the mechanism: one histogram comes back without noise (and without an OpenDP draw)."""
    _on_call(monkeypatch, 2, lambda real, c, e, s, rng: _identity(c, e))


def _mechanism_draws_at_the_full_epsilon(monkeypatch):
    """Inside the mechanism: one histogram's noise drawn at d times the epsilon the call declares."""
    _on_call(monkeypatch, 1, lambda real, c, e, s, rng: real(c, e * len(N_CODES), s, rng))


def _one_histogram_at_the_full_epsilon(monkeypatch):
    """In the release: one histogram given the whole budget, not its share."""
    _on_call(monkeypatch, 1, lambda real, c, e, s, rng: real(c, e * len(N_CODES), s, rng))


def _one_histogram_released_exact(monkeypatch):
    """In the release: one histogram never goes through the mechanism."""
    _on_call(monkeypatch, 2, lambda real, c, e, s, rng: _identity(c, e))


def _noise_drawn_then_dropped(monkeypatch):
    _on_call(monkeypatch, 0, lambda real, c, e, s, rng: (real(c, e, s, rng), _identity(c, e))[1])


def _counts_doubled_before_the_noise(monkeypatch):
    _on_call(monkeypatch, 3, lambda real, c, e, s, rng: real(2 * np.asarray(c), e, s, rng))


def _an_extra_uncharged_draw(monkeypatch):
    _on_call(monkeypatch, 0, lambda real, c, e, s, rng: (real(c, e, s, rng), real(c, e, s, rng))[1])


def _research_sampler_in_production(monkeypatch):
    _on_call(monkeypatch, 1, lambda real, c, e, s, rng: real(c, e, s, np.random.default_rng()))


INSIDE_THE_MECHANISM = [
    (_mechanism_skips_the_noise, "a count release of 6 values drew exact noise on 0"),
    (
        _mechanism_draws_at_the_full_epsilon,
        r"costs epsilon .* for the true sensitivity 1, more than the .*0\.25\)? it declared",
    ),
]
IN_THE_RELEASE = [
    (_one_histogram_at_the_full_epsilon, "histogram 1's noise costs epsilon .*, more than its share 0.25"),
    (_one_histogram_released_exact, "a release of 4 histograms made 3 mechanism calls"),
    (_noise_drawn_then_dropped, "histogram 0's released counts are not its mechanism's output"),
    (_counts_doubled_before_the_noise, "histogram 3's mechanism saw other counts than the rows'"),
    (_an_extra_uncharged_draw, "a release of 4 histograms made 5 mechanism calls"),
    (_research_sampler_in_production, "the research sampler discrete_laplace_counts ran on the production path"),
]


@pytest.mark.parametrize(
    ("weaken", "reason"), INSIDE_THE_MECHANISM, ids=[w.__name__.strip("_") for w, _ in INSIDE_THE_MECHANISM]
)
def test_the_checker_refuses_a_weakened_mechanism(monkeypatch, weaken, reason):
    weaken(monkeypatch)
    with pytest.raises(AccountingError, match=reason):
        account_marginals(*_release(monkeypatch))


@pytest.mark.parametrize(("weaken", "reason"), IN_THE_RELEASE, ids=[w.__name__.strip("_") for w, _ in IN_THE_RELEASE])
def test_the_checker_refuses_a_weakened_release(monkeypatch, weaken, reason):
    with pytest.raises(AccountingError, match=reason):
        account_marginals(*_release(monkeypatch, weaken=weaken))


@pytest.mark.parametrize("relation", ["add-remove", "replace-one"])
def test_the_checker_refuses_half_the_noise_behind_an_honest_map(monkeypatch, relation):
    """OpenDP's Laplace measurement built at half the scale, its privacy map the honest one's (so the
    sampler's own map check passes): the real scale gives twice the share."""
    codes, y = _rows()
    recorder = Recorder().install(monkeypatch)
    with opendp_noise_scaled(0.5):  # inside the recorder: the weakened measurement is what it records
        released = release_marginals(codes, y, N_CODES, N_CLASSES, 1.0, relation=relation)
    with pytest.raises(AccountingError, match=r"more than the .*0\.25\)? it declared"):
        account_marginals(recorder.take(), released, codes, y, TrueSensitivity(relation))


def test_the_checker_refuses_the_add_remove_sensitivity_under_replace_one(monkeypatch):
    """A release labelled replace-one but noised for sensitivity 1: each histogram costs 2 epsilon / d."""
    monkeypatch.setattr(marginals_module, "LEAF_COUNT_SENSITIVITY", {"add-remove": 1, "replace-one": 1})
    with pytest.raises(AccountingError, match=r"for the true sensitivity 2, more than the .*0\.25\)? it declared"):
        account_marginals(*_release(monkeypatch, relation="replace-one"), TrueSensitivity("replace-one"))


def test_the_checker_refuses_a_release_audited_under_another_relation(monkeypatch):
    with pytest.raises(AccountingError, match="the release says add-remove, the audit is for replace-one"):
        account_marginals(*_release(monkeypatch), TrueSensitivity("replace-one"))
