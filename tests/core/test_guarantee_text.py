"""The printed guarantee says NOT differentially private, with the reason, whenever an input was not."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from edprf_core import (
    ContinuousFeature,
    EDPRFClassifier,
    LabelSpec,
    PrivacyLeakWarning,
    Schema,
    draft_schema,
    load_embedded,
    merge_forests,
)
from edprf_core.forest import large_epsilon_note
from edprf_core.research import PaperEDPRFClassifier


@pytest.fixture(scope="module")
def wall():
    X, y, schema = load_embedded("wall_robot_navigation")
    return X[:400], y[:400], schema


def test_production_fit_states_relation_mechanisms_and_exact_backend(wall):
    X, y, schema = wall
    text = EDPRFClassifier(schema, epsilon=0.5, max_depth=3, n_trees=1).fit(X, y).forest_.guarantee()
    assert text.startswith("epsilon = 0.5 differential privacy per record under the add-remove")
    assert "permute-and-flip" in text and "exact OpenDP sampler" in text and "NOT" not in text


def test_a_seeded_fit_is_not_dp(wall):
    X, y, schema = wall
    clf = EDPRFClassifier(schema, max_depth=3, n_trees=1, random_state=3).fit(X, y)
    text = clf.forest_.guarantee()
    assert text.startswith("NOT differentially private") and "fixed research seed" in text
    assert "numpy floating-point sampler" in text and clf.privacy_.dp  # the options keep the shapes public
    assert not clf.dp_ and clf.guarantee_ == text  # the model is not DP: a sklearn habit (random_state=42) says so


def test_a_seeded_fit_warns_that_the_model_is_not_dp(wall):
    """random_state=42 out of scikit-learn habit gave a model whose dp_ was True (walkthrough of stop 44)."""
    from edprf_core import DPMarginalsClassifier, SeededNoiseWarning

    X, y, schema = wall
    for estimator in (
        EDPRFClassifier(schema, max_depth=2, n_trees=1, random_state=42),
        DPMarginalsClassifier(schema, random_state=42),
    ):
        with pytest.warns(SeededNoiseWarning, match="random_state set: .* NOT differentially private") as seen:
            estimator.fit(X, y)
        assert seen[0].filename == __file__ and not estimator.dp_  # attributed to the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeededNoiseWarning)
        assert EDPRFClassifier(schema, max_depth=2, n_trees=1).fit(X, y).dp_  # no seed: no warning, DP


def test_an_unseeded_fit_by_the_floating_point_sampler_is_not_dp(wall):
    """sampler="numpy" without a seed gave dp_ True and "epsilon = 1 differential privacy per record", with a
    delta of about 1e-19 per draw that no argument supports (numpy's exponential draws are ziggurat, not -log U;
    and float rounding is not a tail effect)."""
    from edprf_core import DPMarginalsClassifier
    from edprf_core._forest import FLOAT_NOISE_REASON

    X, y, schema = wall
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no seed: nothing warns, the guarantee text is what says it
        clf = PaperEDPRFClassifier(schema, epsilon=1, max_depth=3, n_trees=1, sampler="numpy").fit(X, y)
    assert clf.privacy_.sampler == "numpy" and not clf.privacy_.seeded and clf.privacy_.dp
    assert clf.dp_ is False and clf.forest_.dp is False
    text = clf.guarantee_
    assert text.startswith(f"NOT differentially private: {FLOAT_NOISE_REASON}.")
    assert "floating point (sampler='numpy')" in text and "use the exact sampler for a release" in text
    assert "delta" not in text and "1e-19" not in text
    assert clf.forest_.parts[0][1].statement().startswith("NOT differentially private as released: its noise was")
    # the research path still fits and predicts
    assert clf.predict(X[:5]).shape == (5,)
    # the same reason on the marginals model's seeded (numpy) fits, beside the seed's
    marginals = DPMarginalsClassifier(schema, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        marginals.fit(X, y)
    assert FLOAT_NOISE_REASON in marginals.guarantee_ and not marginals.dp_


def test_stop_when_pure_is_not_dp(wall):
    X, y, schema = wall
    with pytest.warns(PrivacyLeakWarning):
        clf = PaperEDPRFClassifier(schema, max_depth=3, n_trees=1, stop_when_pure=True).fit(X, y)
    assert not clf.dp_ and "stop_when_pure" in clf.forest_.guarantee()
    assert clf.forest_.guarantee().startswith("NOT differentially private")


def test_a_drafted_schema_is_not_dp_until_declared(wall):
    X, y, schema = wall
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        drafted = draft_schema(X.assign(Class=y), "Class")
    assert drafted.drafted and drafted.fingerprint != schema.fingerprint
    clf = EDPRFClassifier(drafted, max_depth=3, n_trees=1).fit(X, y)
    assert not clf.dp_ and "schema was drafted from data" in clf.forest_.guarantee()
    assert EDPRFClassifier(_declared(drafted), max_depth=3, n_trees=1).fit(X, y).dp_


def _declared(drafted: Schema) -> Schema:
    """``drafted`` as people declare it: every source and the provenance rewritten, ``drafted`` dropped."""
    from dataclasses import replace

    return replace(
        drafted,
        features=tuple(replace(f, source="the device's data sheet") for f in drafted.features),
        label=replace(drafted.label, source="the study protocol"),
        provenance="declared by the study group",
        drafted=False,
    )


@pytest.mark.privacy
def test_deleting_only_the_drafted_line_leaves_a_draft(wall):
    """rev-data S1: deleting ``drafted = true`` alone from a drafted schema's file made every model on it claim
    epsilon-DP, although each source and the provenance still said DRAFTED FROM DATA (the bounds and lists the
    data's own).  While the draft's text is left anywhere, the schema is drafted: NOT DP, with where it is left."""
    from dataclasses import replace

    from edprf_core.schema import DRAFT_MARK, DraftedSchemaWarning

    X, y, _ = wall
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        drafted = draft_schema(X.assign(Class=y), "Class")
    text = drafted.to_toml()
    assert "drafted = true\n" in text
    edited = Schema.from_toml(text.replace("drafted = true\n", ""))
    assert edited.is_draft and not edited.drafted and "drafted = true" not in edited.to_toml()  # as written
    # the fingerprint is the file's: a model or policy of 0.2.3 on such a schema still loads, and now says NOT DP
    assert edited.fingerprint != drafted.fingerprint and "drafted" in repr(edited)
    assert "drafted = true is gone" in edited.draft_note and f"the source of {X.columns[0]!r}" in edited.draft_note
    with pytest.warns(DraftedSchemaWarning, match="drafted = true is gone"):
        clf = EDPRFClassifier(edited, max_depth=3, n_trees=1).fit(X, y)
    assert not clf.dp_ and clf.forest_.guarantee().startswith("NOT differentially private")
    # one place left is enough; replacing every one makes it a declared schema, however it was built
    declared = _declared(drafted)
    assert not declared.is_draft and declared.draft_note == ""
    assert replace(declared, provenance=f"revised; {DRAFT_MARK} still").draft_note.endswith("the provenance")
    assert not replace(declared, provenance="first drafted from data, then replaced by WHO ranges").is_draft
    last = replace(declared.features[-1], source=f"{DRAFT_MARK}: replace")
    assert replace(declared, features=(*declared.features[:-1], last)).is_draft
    assert replace(declared, label=replace(declared.label, source=DRAFT_MARK)).is_draft
    fixed = replace(edited, features=declared.features, label=declared.label, provenance=declared.provenance)
    assert not fixed.is_draft  # fixing the marks by replace() is enough: nothing sticks


def test_every_consumer_reads_a_draft_left_without_its_flag(wall):
    """rev-s57b N8/N3/N4: the marginals classifier, merge_forests (in either order: one fingerprint, other free
    text) and a schema unpickled from a version that kept no record of the marks all read such a schema as a draft."""
    import pickle

    from edprf_core import DPMarginalsClassifier, merge_forests
    from edprf_core.schema import DraftedSchemaWarning

    X, y, _ = wall
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        drafted = draft_schema(X.assign(Class=y), "Class")
    edited = Schema.from_toml(drafted.to_toml().replace("drafted = true\n", ""))
    declared = _declared(drafted)
    assert edited.fingerprint == declared.fingerprint
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DraftedSchemaWarning)
        marginals = DPMarginalsClassifier(edited, n_bins=4).fit(X, y)
        marked = EDPRFClassifier(edited, max_depth=2, n_trees=1).fit(X, y).forest_
    assert marginals.guarantee_.startswith("NOT differentially private: its schema was drafted from data")
    clean = EDPRFClassifier(declared, max_depth=2, n_trees=1).fit(X, y).forest_
    for parts in ([clean, marked], [marked, clean]):
        assert merge_forests(parts).guarantee().startswith("NOT differentially private"), parts
    assert merge_forests([clean, clean]).dp
    old = pickle.loads(pickle.dumps(edited))
    object.__delattr__(old, "_draft_mark_left")  # as a schema pickled by 0.2.3 comes back
    assert old.is_draft and "drafted = true is gone" in old.draft_note
    assert Schema.from_toml(declared.to_toml()) == declared and EDPRFClassifier(declared, max_depth=3).fit(X, y).dp_


def test_a_fit_on_a_drafted_schema_warns_once(wall):
    """A fit on a drafted schema said nothing: only dp_ and the guarantee text, read later if at all, told that
    the model is not DP.  It warns like a seeded fit (its own class, which code drafting on purpose can filter)."""

    from edprf_core import DPMarginalsClassifier, EDPRFWarning
    from edprf_core.schema import DraftedSchemaWarning

    X, y, _ = wall
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        drafted = draft_schema(X.assign(Class=y), "Class")
    assert issubclass(DraftedSchemaWarning, EDPRFWarning) and not issubclass(DraftedSchemaWarning, PrivacyLeakWarning)
    for estimator in (EDPRFClassifier(drafted, max_depth=2, n_trees=1), DPMarginalsClassifier(drafted)):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            estimator.fit(X, y)
        said = [w for w in seen if issubclass(w.category, DraftedSchemaWarning)]
        assert len(said) == 1 and said[0].filename == __file__, said  # once, at the caller's line
        assert "drafted schema" in str(said[0].message) and "NOT differentially private" in str(said[0].message)
        assert not estimator.dp_
    with warnings.catch_warnings():
        warnings.simplefilter("error", DraftedSchemaWarning)
        EDPRFClassifier(_declared(drafted), max_depth=2, n_trees=1).fit(X, y)  # declared: no warning


def test_a_merge_names_the_part_that_is_not_dp(wall):
    X, y, schema = wall
    good = EDPRFClassifier(schema, max_depth=2, n_trees=1, n_bins=20).fit(X, y).forest_
    seeded = EDPRFClassifier(schema, max_depth=2, n_trees=1, n_bins=20, random_state=1).fit(X, y).forest_
    text = merge_forests([good, seeded], labels=["a", "b"]).guarantee()
    assert text.startswith("NOT differentially private: part 'b'")


def test_a_merge_states_each_reason_once_with_the_parts_it_applies_to(wall):
    """30 seeded parties repeated the same reason 30 times in the guarantee (stop 40 walkthrough item)."""
    X, y, schema = wall
    good = EDPRFClassifier(schema, max_depth=2, n_trees=1, n_bins=20).fit(X, y).forest_
    seeded = [
        EDPRFClassifier(schema, max_depth=2, n_trees=1, n_bins=20, random_state=i).fit(X, y).forest_ for i in range(5)
    ]
    forest = merge_forests([seeded[0], good, *seeded[1:]], labels=["a", "ok", "b", "c", "d", "e"])
    reasons = forest.not_dp_reasons()
    assert len(reasons) == 2  # the seed, and the floating-point noise a seed implies
    assert reasons[0].startswith("5 of 6 parts ('a', 'b', 'c' and 2 more): its noise came from a fixed research seed")
    assert reasons[1].startswith("5 of 6 parts ('a', 'b', 'c' and 2 more): its noise was drawn in floating point")
    assert forest.guarantee().count("fixed research seed") == 1 + 1  # the headline, and the seeded parts' line
    assert forest.guarantee().count("sampler='numpy'") == 1 + 1


def test_a_merge_on_a_drafted_schema_states_no_guarantee_on_any_line(wall):
    """The headline said NOT differentially private, and the part lines below it still read "epsilon = 1
    differential privacy per record"."""
    X, y, _ = wall
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        drafted = draft_schema(X.assign(Class=y), "Class")
    parts = [EDPRFClassifier(drafted, max_depth=2, n_trees=1).fit(X, y).forest_ for _ in range(2)]
    text = merge_forests(parts, labels=["a", "b"]).guarantee()
    headline, *lines = text.splitlines()
    assert headline.startswith("NOT differentially private: its schema was drafted from data")
    assert lines and all("configured for epsilon = 1 differential privacy" in line for line in lines)
    assert all("no guarantee: the model is NOT differentially private" in line for line in lines)


def test_the_floating_point_laplace_baseline_is_not_called_differentially_private():
    """Issue 19, finding 5: float Laplace on counts shows impossible outputs under a neighbour (Mironov 2012)."""
    from edprf_core._mechanisms import LaplaceMechanism

    schema = Schema(
        features=(ContinuousFeature("x", 0.0, 1.0, source="test"),), label=LabelSpec("y", (0, 1)), name="numbers"
    )
    X, y = pd.DataFrame({"x": np.linspace(0, 1, 40)}), np.arange(40) % 2
    clf = PaperEDPRFClassifier(
        schema, epsilon=1.0, variant="tradition", leaf="label", max_depth=1, n_trees=1, n_bins=4, random_state=0
    ).fit(X, y)
    assert not clf.dp_ and "floating-point Laplace" in clf.forest_.guarantee()
    assert "it is NOT differentially\n    private" in LaplaceMechanism.__doc__


def test_a_guarantee_above_epsilon_10_says_what_the_bound_means(wall):
    """A model fitted at epsilon 50 printed 'epsilon = 50 differential privacy' in `edprf inspect`, `predict`'s
    banner and the ONNX metadata with no word on what that protects; only `simulate` and `demo` said it."""
    from edprf_core import DPMarginalsClassifier

    X, y, schema = wall
    note = "Note: epsilon 50 per record is a bound that protects little"
    large = EDPRFClassifier(schema, epsilon=50, max_depth=2, n_trees=1, n_bins=20).fit(X, y).forest_
    assert large.guarantee().count(note) == 1 and large.guarantee().endswith("10 or below.")
    at_10 = EDPRFClassifier(schema, epsilon=10, max_depth=2, n_trees=1, n_bins=20).fit(X, y).forest_
    assert "protects little" not in at_10.guarantee()
    merged = merge_forests([large, at_10], labels=["a", "b"]).guarantee()  # the merge's epsilon is the largest
    assert merged.splitlines()[0].endswith("or below.") and merged.count(note) == 1
    seeded = EDPRFClassifier(schema, epsilon=50, max_depth=2, n_trees=1, random_state=0).fit(X, y).forest_
    assert "protects little" not in seeded.guarantee()  # NOT DP: the reason is what matters
    assert "protects little" not in large.guarantee(large_epsilon=False)
    assert note in DPMarginalsClassifier(schema, epsilon=50).fit(X, y).guarantee_


def test_one_fit_states_the_pooling_caveat_and_a_merge_what_each_part_spends(wall):
    """A single holder's fit ended with 'Across parties, records are assumed disjoint', and a merge's headline
    said 'the trees spend epsilon = 1' although each part's DP row count took 0.05 of it."""
    from edprf_core.forest import FEDERATION_NOTE, POOLING_NOTE

    X, y, schema = wall
    parts = [EDPRFClassifier(schema, epsilon=1.0).fit(X, y).forest_ for _ in range(2)]
    one = parts[0].guarantee()
    assert one.endswith(POOLING_NOTE) and FEDERATION_NOTE not in one
    headline = merge_forests(parts, labels=["a", "b"]).guarantee().splitlines()[0]
    assert "each part spends at most epsilon = 1 per record in all" in headline and "trees spend" not in headline
    assert headline.endswith(FEDERATION_NOTE) and POOLING_NOTE not in headline


def test_a_merged_model_s_guarantee_says_models_of_the_same_parties_add_up(wall):
    """Review (day-2 operations, finding 11): `edprf evaluate` printed "each part spends at most epsilon = 1 per record
    in all" while the parties' ledgers showed 3 spent over three models of the same consortium; nothing told the
    analyst that the models compose."""
    X, y, schema = wall
    parts = [EDPRFClassifier(schema, epsilon=1.0, n_trees=1, max_depth=2).fit(X, y).forest_ for _ in range(2)]
    headline = merge_forests(parts, labels=["a", "b"]).guarantee().splitlines()[0]
    assert headline.endswith(
        "Models from the same parties add up: a record used by several is protected at the sum of their epsilons."
    )


def test_the_guarantee_names_only_the_choices_left_to_the_rule(wall):
    """It said "where the trees, depth, bins and marginals share were not given, they were chosen from a DP count"
    when the trees and depth had been given."""
    X, y, schema = wall
    text = EDPRFClassifier(schema, n_trees=2, max_depth=3).fit(X, y).guarantee_
    assert "(the number of bins was not given: it was chosen from a DP count of the rows that spent epsilon = 0.05" in (
        text
    )
    assert "trees, depth" not in text
    two = EDPRFClassifier(schema, n_bins=10).fit(X, y).guarantee_
    assert "(the number of trees and the depth were not given: they were chosen from a DP count" in two
    fixed = EDPRFClassifier(schema, n_trees=2, max_depth=3, n_bins=10).fit(X, y).guarantee_
    assert "not given" not in fixed and "DP count" not in fixed


@pytest.mark.privacy  # in the gate: mutation review N05, N14, N16, N17 (stop 55)
def test_given_shape_parameters_are_named_as_assumed_chosen_without_the_rows():
    """Library-user review S2-3: after GridSearchCV chose max_depth on the private rows, the refit's guarantee said
    "epsilon = 1 differential privacy" with no condition.  A fit now names the shape parameters it was given and
    the assumption they carry; a fit that chose them all by its DP rule names none, and a release decoded at a
    coordinator (which does not record which were given) says nothing new."""
    from edprf_core import EDPRFClassifier, load_embedded
    from protocol import INSPECTION_POLICY, decode_release, encode_release

    X, y, schema = load_embedded("wall_robot_navigation")
    condition = "assumed chosen without these rows, as every setting is (a choice made on them, by a search or by hand"
    given = EDPRFClassifier(schema, epsilon=1.0, max_depth=3).fit(X, y)
    assert "; the depth was given, " + condition in given.guarantee_
    everything = EDPRFClassifier(schema, epsilon=1.0, max_depth=3, n_trees=2, n_bins=8).fit(X, y)
    assert "; the number of trees, the depth and the number of bins were given, " + condition in everything.guarantee_
    Xb, yb, bank = load_embedded("bank_marketing")  # two classes: a marginals part, its share given
    shared = EDPRFClassifier(bank, epsilon=1.0, marginals_share=0.5, max_depth=3, n_trees=2, n_bins=8).fit(Xb, yb)
    assert "the number of bins and the marginals share were given, " + condition in shared.guarantee_
    automatic = EDPRFClassifier(schema, epsilon=1.0).fit(X, y)
    assert "given, assumed" not in automatic.guarantee_
    decoded = decode_release(encode_release(everything.forest_, "p"), schema, INSPECTION_POLICY)
    assert "given, assumed" not in decoded.forest.guarantee()


def test_a_declared_row_count_is_stated_as_assumed_public_and_its_equality_to_the_rows_is_never_printed(wall):
    """Claims review S1-1/S2-1 (stop 56): a size declared public was printed as plain DP.  The guarantee now states
    the assumption for every declared count.  A count equal to the exact number of rows is warned about, and the
    printed text is the same as for any other count: whether the two are equal is a fact about the rows, which a
    saved or exported model must not carry."""
    X, y, schema = wall
    with pytest.warns(PrivacyLeakWarning, match="exactly the number of training rows"):
        exact = EDPRFClassifier(schema, epsilon=1.0, n_rows_public=len(X), sampler="exact").fit(X, y)
    other = EDPRFClassifier(schema, epsilon=1.0, n_rows_public=len(X) + 1, sampler="exact").fit(X, y)
    assumption = "chosen from a row count declared public (assumed to be public knowledge, not counted from these rows)"
    for clf in (exact, other):
        assert assumption in clf.guarantee_
        assert "exactly" not in clf.guarantee_ and "equal" not in clf.guarantee_
    assert exact.forest_.parts[0][1] == other.forest_.parts[0][1]  # nothing of the coincidence is kept


def test_the_marginals_classifier_is_never_said_to_be_pooled_and_states_per_record(wall):
    """Claims review S3-9/S3-10 (stop 56): a DPMarginalsClassifier cannot be released or pooled, yet its guarantee
    ended with the pooling note, and a given ``n_bins`` was printed as "given" with no assumption."""
    from edprf_core import DPMarginalsClassifier, load_embedded

    Xb, yb, bank = load_embedded("bank_marketing")
    given = DPMarginalsClassifier(bank, epsilon=1.0, n_bins=8).fit(Xb[:2000], yb[:2000]).guarantee_
    assert "If pooled" not in given
    assert given.endswith(
        "Per record (one data row), not per person: a person with k rows is protected at k times "
        "epsilon (one row per person gives per-person epsilon)."
    )
    assert "8 bins given, assumed chosen without these rows, as every setting is" in given


@pytest.mark.privacy  # invariant 6: the verdict is the printed guarantee an analyst reads first
def test_the_one_sentence_verdict_keeps_the_guarantees_caveats(wall):
    """Review rev-s60 F2-F4: the verdict ``edprf inspect`` prints first says what the guarantee says: the note
    above epsilon 10, each part's own relation when they differ (replace-one ε-DP is not add-remove ε-DP), and the
    first clause of each of the guarantee's notes (a simulation's public row counts)."""
    from dataclasses import replace

    X, y, schema = wall
    big = EDPRFClassifier(schema, epsilon=50.0, max_depth=3, n_trees=1).fit(X, y).forest_
    assert big.verdict().startswith(
        "differentially private: epsilon = 50 per record (one data row) under the add-remove"
    )
    assert big.verdict().endswith("Note: " + large_epsilon_note(50.0) + ".")
    small = EDPRFClassifier(schema, epsilon=1.0, max_depth=3, n_trees=1).fit(X, y).forest_
    assert "Note:" not in small.verdict()
    other = EDPRFClassifier(schema, epsilon=8.0, max_depth=3, n_trees=1, relation="replace-one").fit(X, y).forest_
    mixed = merge_forests([small, other], labels=["a", "b"]).verdict()
    assert "epsilon = 8 at most per record (one data row), each part under its own neighbouring relation" in mixed
    assert "under the add-remove and replace-one" not in mixed
    noted = replace(
        merge_forests([small, small], labels=["a", "b"]), notes=("Simulation: counts read as public (x); y",)
    )
    assert "(Simulation: counts read as public: see the guarantee)" in noted.verdict()
    short = replace(noted, notes=("Assumes (public sizes); more",))
    assert "(Assumes (public sizes); more: see the guarantee)" in short.verdict()  # rev-s60b F7: never '(: ...)'
    assert "(: see the guarantee)" not in replace(noted, notes=(" (x)",)).verdict()


def test_the_large_epsilon_note_never_shows_an_epsilon_above_10_as_10():
    """Re-review rev-s60b F8: 10.0000001 printed as "epsilon 10 ... keep epsilon at 10 or below"."""
    assert large_epsilon_note(10.0) == ""
    assert large_epsilon_note(10.0000001).startswith("epsilon 10.0000001 per record is a bound that protects little")
    assert "e^10.0000001;" in large_epsilon_note(10.0000001)
    assert large_epsilon_note(12.5).startswith("epsilon 12.5 per record")  # as before: the short form
