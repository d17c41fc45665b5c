"""What the `edprf` command says about a wrong flag, a swapped argument or a misspelled column: the flag or the
column by name, the valid values, a suggestion; and a one-line description at the top of every help."""

from __future__ import annotations

import argparse
import gzip

import pandas as pd
import pytest

from edprf_core import DataValidationError, EDPRFClassifier, example_schema, load_embedded
from edprf_fl.cli import main
from edprf_fl.cli._main import build_parser


@pytest.fixture
def demo_never_runs(monkeypatch):
    """Fail the test if the demo's handler starts (the flags must be refused while the command line is read)."""
    from edprf_core import _datasets

    def loaded(*_, **__):
        raise AssertionError("the demo loaded its dataset before its flags were checked")

    monkeypatch.setattr(_datasets, "load_embedded", loaded)
    monkeypatch.setattr("edprf_core.load_embedded", loaded)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--epsilon", "0"], "argument --epsilon: expected a positive finite number, got '0'"),
        (["--epsilon", "-1"], "argument --epsilon: expected a positive finite number, got '-1'"),
        (["--epsilon", "inf"], "argument --epsilon: expected a positive finite number, got 'inf'"),
        (["--epsilon", "nan"], "argument --epsilon: expected a positive finite number, got 'nan'"),
        (["--epsilon", "much"], "argument --epsilon: expected a positive finite number, got 'much'"),
        (["--epsilon", "0", "--max-depth", "3"], "argument --epsilon: expected a positive finite number"),
        (["--max-depth", "abc"], "argument --max-depth: expected 'auto' or an integer in [1, 30], got 'abc'"),
        (["--max-depth", "0"], "argument --max-depth: expected 'auto' or an integer in [1, 30], got '0'"),
        (["--max-depth", "31"], "argument --max-depth: expected 'auto' or an integer in [1, 30], got '31'"),
        (["--n-trees", "0"], "argument --n-trees: expected 'auto' or an integer >= 1, got '0'"),
        (["--n-trees", "2.5"], "argument --n-trees: expected 'auto' or an integer >= 1, got '2.5'"),
        (["--n-bins", "1"], "argument --n-bins: expected 'auto' or an integer >= 2, got '1'"),
        (["--seed", "-1"], "argument --seed: expected an integer in [0, 4294967295], got '-1'"),
        (["--seed", str(2**32)], "argument --seed: expected an integer in [0, 4294967295]"),
        (["--dataset", "nope"], "argument --dataset: invalid choice: 'nope'"),
        (["--split-mode", "ternary"], "argument --split-mode: invalid choice: 'ternary'"),
    ],
)
def test_demo_refuses_a_bad_flag_by_name_while_reading_the_command_line(capsys, demo_never_runs, argv, message):
    with pytest.raises(SystemExit) as stop:
        main(["demo", *argv])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: edprf demo")
    assert f"edprf demo: error: {message}" in err
    for internal in ("must be positive", "invalid literal", "parameter of EDPRFClassifier"):
        assert internal not in err


def test_demo_reads_good_flags_as_numbers_and_names_the_datasets():
    args = build_parser().parse_args(
        ["demo", "--epsilon", "0.5", "--max-depth", "4", "--n-trees", "3", "--n-bins", "8", "--seed", "7"]
    )
    assert (args.epsilon, args.max_depth, args.n_trees, args.n_bins, args.seed) == (0.5, 4, 3, 8, 7)
    assert build_parser().parse_args(["demo"]).max_depth == "auto"
    from edprf_core.datasets import embedded_datasets as shipped
    from edprf_fl.cli._arg_types import embedded_datasets

    assert embedded_datasets() == tuple(shipped())
    assert build_parser().parse_args(["demo", "--dataset", "bank_marketing"]).dataset == "bank_marketing"


def test_the_demo_defaults_are_the_estimators_and_the_federation_commands_say_theirs_are_a_partys():
    """edprf demo defaulted to 1 tree and 20 bins where EDPRFClassifier's recommended defaults are 'auto'
    (walkthrough); the federation commands keep a party's settings and say why they differ."""
    import inspect

    from edprf_core import EDPRFClassifier

    estimator = inspect.signature(EDPRFClassifier).parameters
    demo = build_parser().parse_args(["demo"])
    for name in ("n_trees", "max_depth", "n_bins"):
        assert getattr(demo, name) == estimator[name].default == "auto"
    chosen = build_parser().parse_args(["demo", "--n-trees", "auto", "--n-bins", " auto"])
    assert (chosen.n_trees, chosen.n_bins) == ("auto", "auto")
    commands = {a.dest: a for a in build_parser()._actions if a.dest == "command"}["command"].choices
    demo_help = " ".join(commands["demo"].format_help().split())
    assert "'auto': one tree unless the training rows support more" in demo_help
    assert "(3 bins for a few hundred rows, 10 for a few thousand, 20 above n*epsilon = 8,000) (default: auto)" in (
        demo_help
    )
    for command, flag in [("simulate", "--n-trees"), ("simulate", "--n-bins"), ("sweep", "--n-trees-list")]:
        action = next(a for a in commands[command]._actions if flag in a.option_strings)
        assert "federated setting" in action.help and "the central estimator's" in action.help
    assert build_parser().parse_args(["simulate"]).n_trees == 1  # the federated defaults are unchanged
    assert build_parser().parse_args(["simulate"]).n_bins == 20


def test_the_cli_poolings_are_the_cores():
    from edprf_core._leaf_distribution import POOLINGS
    from edprf_fl.cli._arg_types import CLI_POOLINGS

    assert CLI_POOLINGS == POOLINGS  # the default first: log-linear, predict_proba's


def test_the_demo_depth_limit_is_the_cores():
    from edprf_core.forest import MAX_DEPTH_LIMIT as CORE_LIMIT
    from edprf_fl.cli._arg_types import CLI_DEPTH_LIMIT

    assert CLI_DEPTH_LIMIT == CORE_LIMIT


# ------------------------------------------------------------------------------------------ schema check order


@pytest.fixture
def bank_files(tmp_path):
    schema = tmp_path / "bank.toml"
    example_schema("bank_marketing").save(schema)
    X, y, _ = load_embedded("bank_marketing")
    frame = X.head(20).assign(y=y.head(20).to_numpy())
    data = tmp_path / "bank.csv"
    frame.to_csv(data, index=False)
    return schema, data, frame


HINT = "(arguments in the wrong order? usage: edprf schema check SCHEMA DATA)"


def test_schema_check_with_data_first_says_the_order(bank_files, capsys, tmp_path):
    schema, data, _ = bank_files
    assert main(["schema", "check", str(data), str(schema)]) == 1
    err = capsys.readouterr().err
    assert "schema is not valid TOML" in err and HINT in err
    gz = tmp_path / "bank.csv.gz"
    gz.write_bytes(gzip.compress(data.read_bytes()))
    assert main(["schema", "check", str(gz), str(schema)]) == 1
    err = capsys.readouterr().err
    assert "is not UTF-8 text" in err and HINT in err
    odd = tmp_path / "bank.txt"  # no data suffix: the other argument, a TOML table, shows the swap
    odd.write_bytes(data.read_bytes())
    assert main(["schema", "check", str(odd), str(schema)]) == 1
    assert HINT in capsys.readouterr().err


def test_schema_check_in_the_right_order_or_a_plain_bad_schema_has_no_order_hint(bank_files, capsys, tmp_path):
    schema, data, _ = bank_files
    assert main(["schema", "check", str(schema), str(data)]) == 0
    capsys.readouterr()
    broken = tmp_path / "broken.toml"
    broken.write_text("name = \n")
    assert main(["schema", "check", str(broken), str(data)]) == 1
    err = capsys.readouterr().err
    assert "schema is not valid TOML" in err and "wrong order" not in err
    empty = tmp_path / "empty.txt"  # an empty file parses as an empty TOML table: no hint from it
    empty.write_text("")
    assert main(["schema", "check", str(broken), str(empty)]) == 1
    assert "wrong order" not in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ misspelled columns


def test_schema_check_suggests_the_declared_column_for_a_misspelled_one(bank_files, capsys, tmp_path):
    schema, _, frame = bank_files
    data = tmp_path / "renamed.csv"
    frame.rename(columns={"age": "Age"}).to_csv(data, index=False)
    assert main(["schema", "check", str(schema), str(data)]) == 1
    err = capsys.readouterr().err
    assert "missing columns ['age']" in err and "the header's 'Age': did you mean 'age'?" in err
    frame.rename(columns={"balance": "balanse"}).to_csv(data, index=False)  # a typo, not only the case
    assert main(["schema", "check", str(schema), str(data)]) == 1
    assert "the header's 'balanse': did you mean 'balance'?" in capsys.readouterr().err
    frame.rename(columns={"y": "Y"}).to_csv(data, index=False)
    assert main(["schema", "check", str(schema), str(data)]) == 1
    err = capsys.readouterr().err
    assert "label column 'y' is missing from the header; the header's 'Y': did you mean 'y'?" in err


def test_no_suggestion_when_no_column_is_close(bank_files, capsys, tmp_path):
    schema, _, frame = bank_files
    data = tmp_path / "renamed.csv"
    frame.rename(columns={"age": "zzz"}).to_csv(data, index=False)
    assert main(["schema", "check", str(schema), str(data)]) == 1
    err = capsys.readouterr().err
    assert "missing columns ['age']" in err and "did you mean" not in err


def test_predict_streams_and_fit_suggest_the_declared_column(bank_files, tmp_path):
    from edprf_core.tables import stream_rows

    _, _, frame = bank_files
    schema = example_schema("bank_marketing")
    data = tmp_path / "renamed.csv"
    frame.rename(columns={"age": "AGE"}).to_csv(data, index=False)
    with pytest.raises(DataValidationError, match="the header's 'AGE': did you mean 'age'"):
        next(iter(stream_rows(data, schema)))
    X = frame.drop(columns="y").rename(columns={"age": "Age"})
    with pytest.raises(DataValidationError, match="X's 'Age': did you mean 'age'"):
        EDPRFClassifier(schema, epsilon=1.0, n_trees=1, max_depth=2, random_state=0).fit(X, frame["y"])


def test_an_unknown_column_suggests_the_declared_one_it_misspells(capsys, tmp_path):
    import dataclasses

    schema = dataclasses.replace(example_schema("wall_robot_navigation"), ignored_columns=("row_id",))
    path = tmp_path / "wall.toml"
    schema.save(path)
    X, y, _ = load_embedded("wall_robot_navigation")
    data = tmp_path / "wall.csv"
    X.head(5).assign(Row_Id=range(5), Class=y.head(5).to_numpy()).to_csv(data, index=False)
    assert main(["schema", "check", str(path), str(data)]) == 1
    err = capsys.readouterr().err
    assert "unknown columns ['Row_Id']" in err and "did you mean 'row_id'?" in err


def test_schema_draft_suggests_the_label_column(bank_files, capsys):
    _, data, _ = bank_files
    assert main(["schema", "draft", str(data), "--label", "Y"]) == 1
    assert "--label 'Y': no such column" in (err := capsys.readouterr().err) and "(did you mean 'y'?)" in err


def test_closest_name_prefers_a_case_only_difference():
    from edprf_core.tables import closest_name

    assert closest_name("Age", ["age", "page"]) == "age"
    assert closest_name("agee", ["age", "job"]) == "age"
    assert closest_name("xyz", ["age", "job"]) is None
    assert closest_name("age", ["age"]) is None  # never itself


# ------------------------------------------------------------------------------------------ descriptions


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _commands(sub, (*path, name))


UNDESCRIBED = {("budget",), ("simulate",)}
"""Commands whose modules another change owns: their description is left to it."""


def test_every_subcommand_help_starts_with_a_description(capsys):
    found = dict(_commands(build_parser()))
    assert ("demo",) in found and ("schema", "check") in found and ("certs", "party") in found
    for path, parser in found.items():
        if path in UNDESCRIBED:
            continue
        assert parser.description and parser.description.strip(), f"edprf {' '.join(path)} has no description"
        assert "\n" not in parser.description.strip().split(". ")[0], path
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("usage: edprf demo")
    assert "Train a DP forest centrally on an embedded dataset" in out.split("options:")[0]


REST_MARKUP = ("``", ":func:", ":mod:", ":class:", ":meth:", ":attr:", ":data:")


def test_every_help_is_plain_text_without_rest_markup():
    """`edprf explain --help` and `edprf export --help` began with a module docstring's first line, literal reST
    ("``edprf explain MODEL DATA --row N``:"); inspect's stopped mid-sentence where its docstring's line ended."""
    found = dict(_commands(build_parser()))
    found[()] = build_parser()
    for path, parser in found.items():
        text = parser.format_help()
        assert not [m for m in REST_MARKUP if m in text], (path, [line for line in text.splitlines() if "`" in line])
    inspect = " ".join(found[("inspect",)].format_help().split())
    assert "What a release or a global model says, and whether to trust it: " in inspect


def test_the_frame_check_names_the_frame(tmp_path):
    from edprf_core._encoding import as_frame

    schema = example_schema("wall_robot_navigation")
    frame = pd.DataFrame({name: [0.5] for name in schema.feature_names}).rename(columns={"US1": "us1"})
    with pytest.raises(DataValidationError, match="the frame's 'us1': did you mean 'US1'"):
        as_frame(frame, schema)


@pytest.mark.parametrize(
    ("first", "said", "not_said"),
    [
        ("30,007,1,0", "the first line is not a header of this schema", "names a column twice"),
        ("30,30,1,1", "the first line is not a header of this schema", "names a column twice"),  # data repeating
        ("Age,Code,Grade,Outcome", "did you mean 'outcome'?", "not a header"),  # a header, other case
        ("age;code;grade;outcome", "pass --sep ';'", "not a header"),  # a header, another separator
        ("other,other,1", "not a header of this schema", "do not match"),  # data: a declared category, a number
        # another table's header: no option helps, and none is suggested (it was told to pass --no-header); one with
        # as many fields as a headerless row gets a conditional hint (tests/core/test_first_line_cells.py)
        ("height,weight,colour,result,ward", "the file's columns do not match the schema 'unnamed'", "--no-header"),
    ],
)
def test_a_first_line_of_data_is_told_from_a_header_with_another_case_or_separator(tmp_path, first, said, not_said):
    """A headerless file read 'the header names a column twice'; the first fix called a header in another case
    or with another separator 'not a header of this schema' too, pointing at --no-header (review of stop 43)."""
    from edprf_core import load_schema
    from edprf_core.tables import header_names

    from ._neighbours import SCHEMA_TOML

    (tmp_path / "s.toml").write_text(SCHEMA_TOML)
    with pytest.raises(ValueError) as exc:
        header_names(load_schema(tmp_path / "s.toml"), first, ",", True, tmp_path / "f.csv")
    assert said in str(exc.value) and not_said not in str(exc.value)
    if "did you mean" in said:
        assert "--no-header" not in str(exc.value)


def test_the_demo_says_what_a_large_epsilon_means(capsys):
    """`--epsilon 1e6` printed 'epsilon = 1e+06 differential privacy' with no word on what it protects
    (walkthrough of stop 43); `simulate` says it under its guarantee, `demo` now too."""
    from edprf_fl.cli._main import main

    assert main(["demo", "--epsilon", "50", "--n-trees", "2", "--max-depth", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count("epsilon 50 per record is a bound that protects little") == 1  # in the guarantee, once
    assert main(["demo", "--epsilon", "50", "--n-trees", "2", "--max-depth", "3", "--seed", "1"]) == 0
    seeded = capsys.readouterr().out  # NOT DP: the guarantee gives the reason, the note comes under it
    assert "NOT differentially private" in seeded and "note: epsilon 50 per record is a bound" in seeded
    assert main(["demo", "--epsilon", "10", "--n-trees", "2", "--max-depth", "3"]) == 0
    assert "protects little" not in capsys.readouterr().out


def test_the_demo_s_automatic_depth_reads_a_dp_count(capsys):
    """`edprf demo` chose its depth from the exact number of training rows and printed an unconditional guarantee
    (walkthrough of stop 45): the shape then depends on the rows.  'auto' is the estimator's rule now, on a DP count
    charged within epsilon, and the guarantee says so."""
    from edprf_fl.cli._main import main

    assert main(["demo", "--n-trees", "2"]) == 0
    captured = capsys.readouterr()
    assert "chosen from a DP count of the rows" in captured.err and "n = " not in captured.err
    assert "they were chosen from a DP count of the rows that spent epsilon = " in captured.out
    assert main(["demo", "--n-trees", "2", "--max-depth", "3", "--n-bins", "20"]) == 0  # all given: no count is spent
    captured = capsys.readouterr()
    assert "DP count" not in captured.err + captured.out and "depth 3" in captured.out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--epsilon", "-1"], "argument --epsilon: expected a positive finite number, got '-1'"),
        (["--epsilon", "nan"], "argument --epsilon: expected a positive finite number, got 'nan'"),
        (["--evaluation-epsilon", "-0.1"], "argument --evaluation-epsilon: expected a finite number >= 0, got '-0.1'"),
        (["--parties", "27"], "argument --parties: expected an integer in [1, 26], got '27'"),
        (["--n-trees", "0"], "argument --n-trees: expected an integer >= 1, got '0'"),
        (["--max-depth", "0"], "argument --max-depth: expected an integer in [1, 30], got '0'"),
    ],
)
def test_consortium_refuses_a_bad_number_before_building_anything(capsys, tmp_path, argv, message):
    """`--epsilon -1` laid out the whole consortium (keys, parties, policies) and then said 'below its policy's
    min-epsilon 0.01' (walkthrough of stop 45): the command line is read first now, and nothing is written."""
    with pytest.raises(SystemExit) as stop:
        main(["consortium", "--dir", str(tmp_path / "c"), *argv])
    assert stop.value.code == 2 and f"edprf consortium: error: {message}" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_consortium_s_epsilon_default_is_the_coordinator_s():
    from server import CoordinatorConfig

    assert CoordinatorConfig.__dataclass_fields__["epsilon"].default == 1.0  # as `consortium --help` says


def test_the_demo_s_non_private_reference_reads_the_raw_features_and_the_majority_is_shown(capsys):
    """The numbers audit: the demo's reference forest was fitted on the DP trees' bins ("same bins") while the DP
    model's marginals part reads a grid of its own: on bank data it scored 0.8846 against the DP model's 0.8911,
    0.16 points above always answering "no".  It reads the raw features now (as simulate's does), and the majority
    class's accuracy is printed beside it."""
    import re

    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import train_test_split

    from edprf_core import load_embedded
    from edprf_fl.cli._main import main
    from edprf_fl.simulation import raw_features

    assert main(["demo", "--dataset", "bank_marketing", "--n-trees", "2", "--max-depth", "3", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    shown = float(re.search(r"non-private accuracy:\s+(\S+)  \(scikit-learn, 100 trees, raw features\)", out)[1])
    X, y, schema = load_embedded("bank_marketing")
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=1, stratify=y)
    reference = RandomForestClassifier(n_estimators=100, random_state=1, n_jobs=-1)
    reference.fit(raw_features(X_train, schema), y_train)
    assert shown == round(reference.score(raw_features(X_test, schema), y_test), 4)
    majority = float(re.search(r"majority class:\s+(\S+)  \(always 'no'\)", out)[1])
    assert majority == round(float((y_test == "no").mean()), 4) < shown


def test_running_out_of_memory_is_one_line(tmp_path, monkeypatch, capsys):
    """Scale review F8: `edprf schema check` under a memory limit ended in a raw ArrowMemoryError traceback."""
    import pyarrow as pa

    import edprf_core
    from edprf_core import load_embedded
    from edprf_fl.cli import main

    X, y, schema = load_embedded("wall_robot_navigation")
    schema.save(tmp_path / "schema.toml")
    X[:5].assign(Class=y[:5].to_numpy()).to_csv(tmp_path / "data.csv", index=False)

    def no_memory(*args, **kwargs):
        raise pa.ArrowMemoryError("malloc of size 4896896 failed")

    monkeypatch.setattr(edprf_core, "check_data", no_memory)
    assert main(["schema", "check", str(tmp_path / "schema.toml"), str(tmp_path / "data.csv")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    said = (
        "edprf schema check: error: out of memory (ArrowMemoryError: malloc of size 4896896 failed): run it on a "
        "machine with more memory, or on a smaller file (docs/your-own-data.md, How much memory and time)"
    )
    assert err[-1] == said and not any("Traceback" in line for line in err)
