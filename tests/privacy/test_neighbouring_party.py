"""Neighbouring parties D and D' = D + one hostile line, on the production path: the replies agree.

For each hostile line a party of 3,000 rows serves a train request, then an evaluate
request, through its real Flower handlers, as deployed: no seed (the exact OpenDP
samplers), the automatic depth with no declared size (so the DP row count runs and
chooses a depth of several layers), and one held-out salt shared by D and D' (the salt
lives in the party's ledger; both ledgers get the same one).  Everything the coordinator
receives that is not a DP output must be identical for D and D': the reply's status,
reason code and message, its record keys, field names and types, the release's message
fields and every training parameter except the depth (chosen from the DP count), and
the evaluation's metric names, types and ε.  The rows the party really used (captured
where it hands them to ``fit`` and to the evaluation) differ by at most the hostile
record: every row of D is read the same way in D' and keeps its side of the split; and the
``(correct, total)`` its evaluation noise is drawn on is what those held-out rows give,
recounted with the schema's classes and the model's predictions.
Both runs are instrumented (see ``test_epsilon_by_instrumentation``): the noise each
drew must add up to what its ledger charged, whatever the hostile record.

A second D lacks two declared categories (one text, one number, neither the last declared), and
its neighbours add a record of one or both: D's rows must be read the same way once the category
appears (codes are the declared categories' positions, never positions among those present).

Regression of issue 19, finding 4: the old harness ran a research seed with a fixed
depth on 240 rows and gave D and D' different salts, so it never saw the production
path, the DP row count or a failure that depends on one record.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import client._local_data as local_data
import client._party as party_module
import edprf_core._text_table as text_table
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels
from edprf_core.tables import TextColumns
from protocol import release_pb2
from protocol.messages import METRICS_KEY

from ..federation._neighbours import HEADER, HOSTILE, base_lines, file_bytes, make_party
from ._instrumentation import Recorder, account_fit, charged_epsilon_of_evaluation
from ._party_requests import (
    TrainSettings,
    flower_task_identity,  # noqa: F401 (a fixture)
    global_model,
    ledger,
    release_of,
    result_of,
    send_evaluate,
    send_train,
    share_salt,
)

pytestmark = [pytest.mark.privacy, pytest.mark.usefixtures("flower_task_identity")]

N_ROWS = 3000
SALT = "5a" * 16
SETTINGS = TrainSettings(leaf="counts", split_mode="binary", n_trees=2, max_depth=6)
EVALUATION_EPSILON = 0.25


class _UsedRows:
    """Captures the rows a party hands to ``fit`` and to its evaluation (patched in for one request pair), and
    ``counts``: the evaluation's ``(correct, total)`` recounted from those held-out rows (:func:`_recounted`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.train: Counter = Counter()
        self.holdout: Counter = Counter()
        self.counts: tuple[int, int] | None = None
        recorder = self

        class Recording(party_module.EDPRFClassifier):
            def fit(self, X, y):
                recorder.train = _encoded(self._resolved_schema(), X, y)
                return super().fit(X, y)

        real_counts = party_module.evaluation_counts

        def evaluation_counts(forest, X, y):
            recorder.holdout = _encoded(forest.schema, X, y)
            recorder.counts = _recounted(forest, X, y)
            return real_counts(forest, X, y)

        monkeypatch.setattr(party_module, "EDPRFClassifier", Recording)
        monkeypatch.setattr(party_module, "evaluation_counts", evaluation_counts)


def _encoded(schema, X, y) -> Counter:
    codes = encode_features(X, schema, FeatureGrid.from_schema(schema, SETTINGS.n_bins))
    return Counter(map(tuple, np.column_stack([codes, encode_labels(y, schema)]).tolist()))


def _recounted(forest, X, y) -> tuple[int, int]:
    """``(correct, total)`` of the held-out rows: each label as the schema's declared class (``encode_labels``,
    whatever order the file shows the classes in) against the model's prediction."""
    if len(y) == 0:
        return 0, 0
    declared = np.asarray(forest.classes)[encode_labels(y, forest.schema)]
    return int(np.count_nonzero(forest.predict(X) == declared)), len(y)


def _public_train(reply, release) -> dict:
    """Everything of a train reply that is not a DP output (the depth is chosen from the DP count)."""
    result = result_of(reply)
    shape = {
        "records": sorted(reply.content.keys()),
        "fields": {k: type(v).__name__ for k, v in result.items()},
        "status": result["status"],
        "reason": result.get("reason"),
        "message": result.get("message"),
    }
    if release is not None:
        signed = release_pb2.SignedRelease.FromString(result["release"])
        inner = release_pb2.Release.FromString(signed.release)
        shape["signed_fields"] = [f.name for f, _ in signed.ListFields()]
        shape["release_fields"] = [f.name for f, _ in inner.ListFields()]
        shape["header"] = (
            inner.format_version,
            inner.schema_fingerprint,
            inner.party_id,
            inner.run_id,
            inner.request_id,
        )
        shape["parameters"] = {k: v for k, v in asdict(release.params).items() if k != "max_depth"}
        shape["n_trees"] = release.forest.trees.n_trees
    return shape


def _public_evaluation(reply) -> dict:
    result = result_of(reply)
    shape = {
        "records": sorted(reply.content.keys()),
        "fields": {k: type(v).__name__ for k, v in result.items()},
        "result": result,
    }
    metrics = dict(reply.content.metric_records.get(METRICS_KEY, {}))
    shape["metrics"] = {k: type(v).__name__ for k, v in metrics.items()}
    shape["public_metrics"] = {k: v for k, v in metrics.items() if k not in ("correct", "total")}
    return shape


def _serve(
    directory: Path, data: bytes, monkeypatch: pytest.MonkeyPatch, model: bytes | None = None, header: bool = True
):
    """Train then evaluate on one party; every mechanism call must add up to the ledger's charges.  ``header``
    False: the file has no header line, and the party's node config says so (``data-header=false``)."""
    setup = replace(make_party(directory, data, allow_seeded_randomness=False), data_header=header)
    share_salt(setup, SALT)
    used = _UsedRows(monkeypatch)
    recorder = Recorder().install(monkeypatch)
    train = send_train(setup, SETTINGS)
    release = release_of(setup, train) if result_of(train)["status"] == "released" else None
    train_calls = recorder.take()
    evaluation = send_evaluate(setup, model if model is not None else global_model(release), EVALUATION_EPSILON)
    charged = {e.kind: float(e.epsilon_exact) for e in ledger(setup).entries()}
    assert charged == {"release": SETTINGS.epsilon, "evaluation": EVALUATION_EPSILON}
    if release is not None:
        _, faced = account_fit(train_calls, release.forest, sum(used.train.values()))
        assert faced == pytest.approx(charged["release"], rel=1e-9) and faced <= charged["release"]
    eval_calls = recorder.take()
    assert charged_epsilon_of_evaluation(eval_calls) == pytest.approx(charged["evaluation"], rel=1e-9)
    # the noise gets the true counts: a label read otherwise (by the file's first class, M09) moves hundreds
    assert eval_calls[0].values.tolist() == list(used.counts) and used.counts[1] == sum(used.holdout.values())
    return setup, train, release, evaluation, used


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> dict:
    """D: its replies, its model (the evaluation request both neighbours get) and the rows it used."""
    with pytest.MonkeyPatch.context() as mp:
        _, train, release, evaluation, used = _serve(tmp_path_factory.mktemp("D"), file_bytes(n_rows=N_ROWS), mp)
    assert release.params.depth_rule == "dp-count" and release.params.sampler == "exact"
    assert not release.params.seeded and release.params.count_epsilon > 0
    assert release.params.max_depth >= 3, "the party must be big enough for several layers"
    assert result_of(evaluation)["status"] == "evaluated"
    assert sum(used.train.values()) + sum(used.holdout.values()) == N_ROWS
    return {
        "train": _public_train(train, release),
        "evaluate": _public_evaluation(evaluation),
        "model": global_model(release),
        "used": used,
    }


@pytest.fixture(scope="module")
def headerless_baseline(tmp_path_factory) -> dict:
    """D without its header line, read by a party whose node config says ``data-header=false``."""
    with pytest.MonkeyPatch.context() as mp:
        data = file_bytes(n_rows=N_ROWS, header=False)
        _, train, release, evaluation, used = _serve(tmp_path_factory.mktemp("D-headerless"), data, mp, header=False)
    assert sum(used.train.values()) + sum(used.holdout.values()) == N_ROWS  # every line a record
    return {"train": _public_train(train, release), "evaluate": _public_evaluation(evaluation), "used": used}


def _other_label(line: bytes) -> bytes | None:
    """The line with its label ``0`` and ``1`` swapped (None for a line whose label is neither)."""
    head, _, label = line.rpartition(b",")
    return {b"0": head + b",1", b"1": head + b",0"}.get(label)


_FIRST = [(f"{name}_first", line, "first") for name, line, where in HOSTILE if where == "middle"]
_HEADERLESS = [
    *HOSTILE,
    *_FIRST,  # and the file's first class the other one: the evaluation must count labels by the schema's classes
    *[(f"{name}_other_label", _other_label(line), where) for name, line, where in _FIRST if _other_label(line)],
]


@pytest.mark.parametrize(("name", "line", "where"), _HEADERLESS, ids=[h[0] for h in _HEADERLESS])
def test_one_hostile_record_in_a_headerless_file_changes_nothing_but_dp_outputs(
    tmp_path: Path, monkeypatch, baseline, headerless_baseline, name, line, where
):
    """The same audit for a party reading a file without a header line (``data-header=false``), the hostile
    line also as the file's first line, where a header would be (and then with either label, so that the file's
    first class is either one): the replies are D's with a header, and D's rows keep their reading and their side
    of the split (the split hashes a row's own cells)."""
    data = file_bytes(line, where, n_rows=N_ROWS, header=False)
    _, train, release, evaluation, used = _serve(tmp_path, data, monkeypatch, baseline["model"], header=False)
    assert _public_train(train, release) == headerless_baseline["train"] == baseline["train"], name
    assert _public_evaluation(evaluation) == headerless_baseline["evaluate"] == baseline["evaluate"], name
    d = baseline["used"]
    same = headerless_baseline["used"]  # D without a header: the same rows, read the same way, on the same sides
    assert (same.train, same.holdout) == (d.train, d.holdout)
    assert not (d.train - used.train) and not (d.holdout - used.holdout), f"{name}: a row of D moved"
    assert sum(((used.train - d.train) + (used.holdout - d.holdout)).values()) <= 1, name


@pytest.mark.parametrize(("name", "line", "where"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_one_hostile_record_changes_nothing_but_dp_outputs(tmp_path: Path, monkeypatch, baseline, name, line, where):
    _, train, release, evaluation, used = _serve(
        tmp_path, file_bytes(line, where, n_rows=N_ROWS), monkeypatch, baseline["model"]
    )
    assert _public_train(train, release) == baseline["train"], f"{name}: the train reply differs beyond DP outputs"
    assert 1 <= release.params.max_depth <= SETTINGS.max_depth
    assert _public_evaluation(evaluation) == baseline["evaluate"], f"{name}: the evaluation differs beyond DP outputs"
    d = baseline["used"]
    assert not (d.train - used.train), f"{name}: a training row of D was read differently or moved"
    assert not (d.holdout - used.holdout), f"{name}: a held-out row of D was read differently or moved"
    extra = (used.train - d.train) + (used.holdout - d.holdout)
    assert sum(extra.values()) <= 1, f"{name}: more than the hostile record was added"


BLOCK_BYTES = 4096
"""The block size of the block-by-block variant: D's 3,000 lines (about 45 KB) are read in a dozen blocks."""


@pytest.mark.parametrize(("name", "line", "where"), [("D", None, "first"), *_FIRST], ids=["D", *(h[0] for h in _FIRST)])
def test_a_file_read_block_by_block_changes_nothing_but_dp_outputs(
    tmp_path: Path, monkeypatch, baseline, name, line, where
):
    """D, or D' with the hostile line in its first block, read block by block as a file over 64 MiB is
    (``_WHOLE_READ_BYTES`` 0, blocks of :data:`BLOCK_BYTES`): the replies are D's read whole, and every row of D
    keeps its reading and its side.  Each block numbers its texts on its own dictionary before they are put on
    the column's, so a line in an early block brings texts that move every later block's numbers (mutation
    campaign 4, M03: every test file was read whole, so the gate never ran this path)."""
    monkeypatch.setattr(local_data, "_WHOLE_READ_BYTES", 0)
    monkeypatch.setattr(text_table, "_BLOCK_BYTES", BLOCK_BYTES)
    reads = []
    real_read = local_data.read_numbered_columns
    monkeypatch.setattr(local_data, "read_numbered_columns", lambda *a, **k: reads.append(a) or real_read(*a, **k))
    data = file_bytes(line, where, n_rows=N_ROWS)
    assert len(data) > 8 * BLOCK_BYTES and (line is None or data.index(line) < BLOCK_BYTES)
    _, train, release, evaluation, used = _serve(tmp_path, data, monkeypatch, baseline["model"])
    assert len(reads) == 2, "train and evaluate must each read the file block by block"
    assert _public_train(train, release) == baseline["train"], f"{name}: the train reply differs beyond DP outputs"
    assert _public_evaluation(evaluation) == baseline["evaluate"], f"{name}: the evaluation differs"
    d = baseline["used"]
    assert not (d.train - used.train) and not (d.holdout - used.holdout), f"{name}: a row of D moved"
    assert sum(((used.train - d.train) + (used.holdout - d.holdout)).values()) <= (0 if line is None else 1), name


def _no_usable_row(kind: str, extra: bytes | None = None) -> bytes:
    """A D without a usable row (``header``: the header line alone; ``undeclared``: D's lines, each label the
    undeclared class ``2``), or D plus the line ``extra``."""
    lines = [] if kind == "header" else [line.rpartition(b",")[0] + b",2" for line in base_lines(N_ROWS)]
    cut = len(lines) // 2
    body = lines if extra is None else [*lines[:cut], extra, *lines[cut:]]
    return b"\n".join([HEADER, *body]) + b"\n"


@pytest.mark.parametrize("kind", ["header", "undeclared"], ids=["header-only", "every-label-undeclared"])
def test_a_party_without_a_usable_row_answers_as_with_one(tmp_path: Path, baseline, kind):
    """D has no row the schema accepts; D' adds one valid record.  Whether a usable row exists is itself data
    (one record away), so D trains and evaluates on no rows instead of being refused: both replies' public parts
    are equal and both ledgers are charged the same (mutation campaign 4, M08: D was told invalid_local_data
    after its reservation, D' released)."""
    served = {}
    for name, extra in (("D", None), ("D-prime", b"30,007,1,0")):
        with pytest.MonkeyPatch.context() as mp:
            setup, train, release, evaluation, used = _serve(
                tmp_path / name, _no_usable_row(kind, extra), mp, baseline["model"]
            )
        charged = sorted((e.kind, float(e.epsilon_exact)) for e in ledger(setup).entries())
        served[name] = (_public_train(train, release), _public_evaluation(evaluation), charged, used)
    (d_train, d_evaluation, d_charged, d_used), (train, evaluation, charged, used) = served["D"], served["D-prime"]
    assert d_train["status"] == "released" and d_evaluation["result"]["status"] == "evaluated"
    assert (train, evaluation, charged) == (d_train, d_evaluation, d_charged)
    assert not d_used.train and not d_used.holdout and sum((used.train + used.holdout).values()) == 1


# D lacking declared categories: a record that brings one must not change how D's rows are read
ABSENT: list[tuple[str, bytes]] = [
    ("absent_text_category", b"30,12,1,0"),
    ("absent_number_category", b"30,007,1,1"),
    ("both_absent_categories", b"30,12,1,1"),
]
"""Records of the categories D lacks (``code = 12``, ``grade = 1``), one or both: neither is the last declared one."""


def lacking_bytes(extra: bytes | None = None) -> bytes:
    """D without the rows of ``code = 12`` or ``grade = 1`` (declared, absent from D), or that D plus ``extra``
    in the middle.  An encoder that numbered the categories present in the data instead of the declared ones
    (codes by position among those present) would read D's rows of later categories differently once the record
    brings the absent one."""
    lines = [line for line in base_lines(N_ROWS) if line.split(b",")[1] != b"12" and line.split(b",")[2] != b"1"]
    cut = len(lines) // 2
    body = lines if extra is None else [*lines[:cut], extra, *lines[cut:]]
    return b"\n".join([HEADER, *body]) + b"\n"


@pytest.fixture(scope="module")
def lacking_baseline(tmp_path_factory) -> dict:
    """D lacking two declared categories: its replies, its model and the rows it used."""
    lines = lacking_bytes().splitlines()[1:]
    assert len(lines) >= 1000 and all(line.split(b",")[1] in (b"007", b"other") for line in lines)
    assert {line.split(b",")[2] for line in lines} == {b"2", b"3"}
    with pytest.MonkeyPatch.context() as mp:
        _, train, release, evaluation, used = _serve(tmp_path_factory.mktemp("D-lacking"), lacking_bytes(), mp)
    assert release.params.depth_rule == "dp-count" and release.params.max_depth >= 3
    assert sum(used.train.values()) + sum(used.holdout.values()) == len(lines)
    return {
        "train": _public_train(train, release),
        "evaluate": _public_evaluation(evaluation),
        "model": global_model(release),
        "used": used,
    }


@pytest.mark.parametrize(("name", "line"), ABSENT, ids=[a[0] for a in ABSENT])
def test_a_record_of_a_category_absent_from_d_changes_nothing_but_dp_outputs(
    tmp_path: Path, monkeypatch, lacking_baseline, name, line
):
    _, train, release, evaluation, used = _serve(tmp_path, lacking_bytes(line), monkeypatch, lacking_baseline["model"])
    assert _public_train(train, release) == lacking_baseline["train"], (
        f"{name}: the train reply differs beyond DP outputs"
    )
    assert _public_evaluation(evaluation) == lacking_baseline["evaluate"], f"{name}: the evaluation differs"
    d = lacking_baseline["used"]
    assert not (d.train - used.train), f"{name}: a training row of D was read differently once the category appeared"
    assert not (d.holdout - used.holdout), f"{name}: a held-out row of D was read differently"
    extra = (used.train - d.train) + (used.holdout - d.holdout)
    assert sum(extra.values()) == 1, f"{name}: the record of the absent category must be read as one more row"


def test_the_harness_covers_at_least_30_hostile_records():
    assert len(HOSTILE) >= 30
    assert len({h[1] for h in HOSTILE}) == len(HOSTILE) - 1  # one line tested at two positions


def test_the_harness_sees_a_coupling_reader(tmp_path: Path, monkeypatch, baseline):
    """Power check: a reader that rescales ages by the data's own largest one when it exceeds the domain (a
    data-derived bound) reads D as the party does (its ages are within [0, 100]), and every row of D otherwise
    once one record of age 200 is added.  (pandas' column-wide type inference served until stop 57, when the
    schema began to read ``1.0`` under text classes ``["0", "1"]`` as ``1``, cell by cell: it couples no more.)"""

    def rescaling_reader(path, schema, **_):  # the party reads a text file's columns by read_columns
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        ages = pd.to_numeric(frame["age"], errors="coerce")
        frame["age"] = (ages * (100.0 / max(ages.max(), 100.0))).astype(str)
        return TextColumns(columns=dict(frame.items()), line_numbers=np.arange(len(frame)) + 2, dropped=[])

    monkeypatch.setattr(local_data, "read_columns", rescaling_reader)
    _, train, release, _, used = _serve(
        tmp_path, file_bytes(b"200,007,1,1", "middle", n_rows=N_ROWS), monkeypatch, baseline["model"]
    )
    d = baseline["used"]
    moved = (d.train - used.train) + (d.holdout - used.holdout)
    assert moved or _public_train(train, release) != baseline["train"], "a coupling reader must be caught"


def test_the_harness_sees_a_reply_that_depends_on_one_record(tmp_path: Path, monkeypatch, baseline):
    """Power check: a release whose public header depends on the parity of the party's row count is caught."""
    real_data, real_encode = party_module.Party._data, party_module.encode_release
    seen: list[int] = []

    def data(self):
        local = real_data(self)
        seen.append(len(local.y_train) + len(local.y_holdout))
        return local

    def leaky(forest, party_id, *args, **kwargs):
        return real_encode(forest, f"{party_id}-{seen[-1] % 2}", *args, **kwargs)

    monkeypatch.setattr(party_module.Party, "_data", data)
    monkeypatch.setattr(party_module, "encode_release", leaky)
    shapes = []
    for i, data_bytes in enumerate([file_bytes(n_rows=N_ROWS), file_bytes(b"30,007,1,0", "middle", n_rows=N_ROWS)]):
        _, train, release, _, _ = _serve(tmp_path / str(i), data_bytes, monkeypatch, baseline["model"])
        shapes.append(_public_train(train, release))
    assert shapes[0] != shapes[1]


def _typed_frame(missing: str | None) -> pd.DataFrame:
    """D as a column-typed writer holds it (ages as floats, grades and labels as integers), or D' = D plus, in the
    middle, a record without a ``missing`` cell (``grade`` or the label ``outcome``; refused by the schema's rule, so
    dropped): its writer then types that whole column as floats, and pandas writes every ``1`` as ``1.0``, Parquet
    stores the column as doubles.  The label's classes are declared as text (``["0", "1"]``): a text ``1.0``."""
    rows = [line.decode().split(",") for line in base_lines(N_ROWS)]
    frame = pd.DataFrame(rows, columns=HEADER.decode().split(","))
    frame = frame.astype({"age": float, "grade": int, "outcome": int})
    if missing is not None:
        cut = len(frame) // 2
        extra = pd.DataFrame({"age": [42.0], "code": ["007"], "grade": [2], "outcome": [1]})
        extra[missing] = np.nan
        frame = pd.concat([frame.iloc[:cut], extra, frame.iloc[cut:]], ignore_index=True)
    return frame


def _used_rows_of_a_written_file(directory: Path, frame: pd.DataFrame, writer: str, monkeypatch) -> _UsedRows:
    setup = make_party(directory, b"", allow_seeded_randomness=False)
    if writer == "csv":
        frame.to_csv(setup.data_path, index=False)
    else:
        setup = replace(setup, data_path=directory / "data.parquet")
        frame.to_parquet(setup.data_path, index=False)
    share_salt(setup, SALT)
    used = _UsedRows(monkeypatch)
    train = send_train(setup, SETTINGS)
    assert result_of(train)["status"] == "released"
    send_evaluate(setup, global_model(release_of(setup, train)), EVALUATION_EPSILON)
    return used


@pytest.mark.parametrize("column", ["grade", "outcome"])
@pytest.mark.parametrize("writer", ["csv", "parquet"])
def test_a_record_that_makes_its_writer_retype_a_column_moves_no_row_of_d(tmp_path: Path, monkeypatch, writer, column):
    """D and D' written by a writer that types whole columns (pandas' ``to_csv``, as ``deploy/README.md``
    exports; Parquet): the added record, itself dropped, turns every other row's grade (numeric categories) or
    label (text classes ``"0"``, ``"1"``) ``1`` into ``1.0``.  Each row of D must be read the same way and keep its
    side of the split: the split hashes a cell as the schema reads it, not as the file spells it (DP review, stop
    52: hashing the text moved 955 of 3,000 rows); text classes that are integers meet ``1.0`` (black-box review,
    stop 57: every row of D' was dropped, the release's depth fell from 4 to 1)."""
    pytest.importorskip("pyarrow.parquet")
    with pytest.MonkeyPatch.context() as mp:
        d = _used_rows_of_a_written_file(tmp_path / "D", _typed_frame(None), writer, mp)
    assert sum(d.train.values()) + sum(d.holdout.values()) == N_ROWS and d.holdout
    with pytest.MonkeyPatch.context() as mp:
        used = _used_rows_of_a_written_file(tmp_path / "D-prime", _typed_frame(column), writer, mp)
    assert not (d.train - used.train), "a training row of D moved or was read differently"
    assert not (d.holdout - used.holdout), "a held-out row of D moved or was read differently"
    assert (used.train, used.holdout) == (d.train, d.holdout)  # the added record is dropped by its rule
