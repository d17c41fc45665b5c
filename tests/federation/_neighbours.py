"""The neighbouring-dataset harness for the party's data path: D, D' = D + one hostile line.

D is a generated CSV (240 rows by default, any number on request); D' is D plus ONE
hostile line.  ``tests/privacy/test_neighbouring_party.py`` serves a train and an evaluate
request on each through the party's real Flower handlers on the production path (no
seed, automatic depth, one shared held-out salt) and compares everything that would go to
the coordinator: it must be identical except through the DP outputs.  This is the
permanent gate for every change to the data path, which must keep two rules: how one row
is read may not depend on any other row (adding a record must not change how the others
are parsed), and everything a party sends, refusals, error texts, reason codes and sizes
included, is an output that may depend on the data only through DP outputs
(``docs/privacy.md``, "Threat model").  ``tests/federation/test_party_outputs.py`` reuses
the same lines.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from client import PartyPolicy, PartySetup
from client._local_data import load_local_data
from edprf_core import load_schema
from edprf_core.encoding import FeatureGrid, encode_features, encode_labels

SCHEMA_TOML = """\
format = 1
description = "neighbouring-dataset harness: a generated table"
ignored_columns = []
missing_values = ["", "?", "-1"]

[label]
column = "outcome"
classes = ["0", "1"]

[[features]]
kind = "continuous"
name = "age"
lower = 0.0
upper = 100.0
missing = 50.0
source = "generated"

[[features]]
kind = "categorical"
name = "code"
categories = ["007", "12", "other"]
unknown = "other"
missing = "refuse"
source = "generated"

[[features]]
kind = "categorical"
name = "grade"
categories = [1, 2, 3]
unknown = "refuse"
missing = "refuse"
source = "generated"
"""

HEADER = b"age,code,grade,outcome"
HOLDOUT_FRACTION = 0.3
BIG = 10_000_000

# (name, the hostile line's bytes, where it goes: "middle" or "end" (no final newline))
HOSTILE: list[tuple[str, bytes, str]] = [
    ("empty_age", b",007,1,0", "middle"),
    ("empty_label", b"30,007,1,", "middle"),
    ("nan_token", b"nan,007,1,0", "middle"),
    ("NaN_token", b"NaN,12,2,1", "middle"),
    ("NULL_token", b"NULL,12,2,1", "middle"),
    ("NA_token", b"NA,12,2,0", "middle"),
    ("question_mark_age", b"?,007,1,0", "middle"),
    ("question_mark_label", b"30,007,1,?", "middle"),
    ("non_utf8_category", b"30,\xff\xfe,1,0", "middle"),
    ("non_utf8_label", b"30,007,1,\xc3", "middle"),
    ("unterminated_quote_middle", b'30,"007,1,0', "middle"),
    ("unterminated_quote_label", b'30,007,1,"0', "middle"),
    ("unterminated_quote_at_end", b'30,007,1,"0', "end"),
    ("newline_inside_quotes", b'30,"0\n07",1,0', "middle"),
    ("stray_char_after_quote", b'30,"007"x,1,0', "middle"),
    ("fully_quoted", b'"30","007","1","0"', "middle"),
    ("empty_quoted_category", b'30,"",1,0', "middle"),
    ("extra_field", b"30,007,1,0,extra", "middle"),
    ("missing_field", b"30,007,1", "middle"),
    ("bom_in_the_middle", b"\xef\xbb\xbf30,007,1,0", "middle"),
    ("nul_byte", b"30,007\x00,1,0", "middle"),
    ("crlf", b"30,007,1,0\r", "middle"),
    ("lone_cr", b"30,007\r,1,0", "middle"),
    ("tabs", b"30\t007\t1\t0", "middle"),
    ("only_separators", b",,,", "middle"),
    ("label_not_a_class", b"30,007,1,2", "middle"),
    ("label_float_text", b"30,007,1,0.0", "middle"),
    ("label_exponent", b"30,007,1,1e0", "middle"),
    ("overflow_1e309", b"1e309,007,1,0", "middle"),
    ("overflow_1e400", b"1e400,12,2,1", "middle"),
    ("inf_token", b"inf,007,1,0", "middle"),
    ("huge_negative", b"-1e308,12,2,1", "middle"),
    ("negative_zero", b"-0,007,1,0", "middle"),
    ("numeric_missing_token", b"-1,007,1,0", "middle"),  # the schema's token "-1": missing, age imputed
    ("numeric_token_as_float", b"-1.0,12,2,1", "middle"),  # the same number, written otherwise: missing too
    ("numeric_token_spaced_exponent", b" -1e0 ,007,1,0", "middle"),
    ("numeric_token_as_grade", b"30,12,-1.0,1", "middle"),  # a numeric category's cell: missing (refused)
    ("numeric_token_as_label", b"30,007,1,-1.0", "middle"),  # a label that is the code: missing (dropped)
    ("whitespace_age", b"  ,007,1,0", "middle"),
    ("numeric_looking_category", b"30,7,1,0", "middle"),
    ("zero_padded_grade", b"30,007,007,1", "middle"),
    ("float_grade", b"30,12,1.0,1", "middle"),
    ("negative_zero_grade", b"30,12,-0,1", "middle"),
    ("spaced_grade", b"30,12, 2 ,1", "middle"),
    ("huge_age_cell", b"9" * BIG + b",007,1,0", "middle"),
    ("huge_category_cell", b"30," + b"x" * BIG + b",1,0", "middle"),
    ("huge_label_cell", b"30,007,1," + b"1" * BIG, "middle"),
]


def base_lines(n: int = 240, seed: int = 0) -> list[bytes]:
    """The rows of D: a clean, generated table."""
    rng = np.random.default_rng(seed)
    age = rng.uniform(0, 100, n).round(1)
    code = rng.choice(["007", "12", "other"], n)
    grade = rng.integers(1, 4, n)
    outcome = ((age > 50) ^ (rng.random(n) < 0.1)).astype(int)
    return [f"{a},{c},{g},{o}".encode() for a, c, g, o in zip(age, code, grade, outcome)]


def file_bytes(hostile: bytes | None = None, where: str = "middle", n_rows: int = 240, header: bool = True) -> bytes:
    """D (``hostile`` None) or D' = D plus the hostile line, first, in the middle or at the end (no final newline);
    without the header line when ``header`` is False (a party's ``data-header=false``)."""
    lines = base_lines(n_rows)
    top = [HEADER] if header else []
    if hostile is None:
        return b"\n".join([*top, *lines]) + b"\n"
    if where == "end":
        return b"\n".join([*top, *lines, hostile])
    cut = 0 if where == "first" else len(lines) // 2
    return b"\n".join([*top, *lines[:cut], hostile, *lines[cut:]]) + b"\n"


def make_party(directory: Path, data: bytes, **overrides: Any) -> PartySetup:
    """A party on ``directory`` with its data file, schema, policy and an empty ledger.

    ``overrides`` replace fields of the harness's policy (which allows research seeds unless
    ``allow_seeded_randomness=False`` is given).
    """
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "schema.toml").write_text(SCHEMA_TOML, encoding="utf-8")
    schema = load_schema(directory / "schema.toml")
    fields = {
        "party_id": "harness",
        "lifetime_epsilon_cap": 100.0,
        "max_release_epsilon": 1.0,
        "max_evaluation_epsilon": 1.0,
        "schema_fingerprint": schema.fingerprint,
        "allow_seeded_randomness": True,
        "holdout_fraction": HOLDOUT_FRACTION,
        **overrides,
    }
    policy = PartyPolicy(**fields)
    (directory / "policy.toml").write_text(policy.to_toml(), encoding="utf-8")
    (directory / "data.csv").write_bytes(data)
    return PartySetup(
        directory / "data.csv", directory / "schema.toml", directory / "policy.toml", directory / "ledger.sqlite"
    )


@dataclass(frozen=True)
class Observed:
    """What the coordinator receives from one request, split into public shape and DP content."""

    shape: dict[str, Any]
    dp_content: dict[str, Any]


def row_multiset(setup: PartySetup, salt: str) -> tuple[Counter, Counter]:
    """Training and held-out rows of a party, as multisets of encoded (codes..., label) tuples."""
    schema = load_schema(setup.schema_path)
    data = load_local_data(setup.data_path, schema, HOLDOUT_FRACTION, salt)
    grid = FeatureGrid.from_schema(schema, 8)

    def rows(X, y) -> Counter:
        codes = encode_features(X, schema, grid)
        labels = encode_labels(y, schema)
        return Counter(map(tuple, np.column_stack([codes, labels]).tolist()))

    return rows(data.X_train, data.y_train), rows(data.X_holdout, data.y_holdout)
