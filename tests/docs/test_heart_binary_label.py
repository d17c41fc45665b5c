"""docs/using-a-model.md's binary heart disease label: the shipped schema with that [label] reads the grades 0..4
as the classes 0, 1, 1, 1, 1 (the example that a reviewer found did not match the shipped five-class schema)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from edprf_core import Schema

REPO = Path(__file__).resolve().parents[2]


def test_the_documented_label_makes_the_shipped_schema_binary():
    doc = (REPO / "docs" / "using-a-model.md").read_text(encoding="utf-8")
    label = re.search(r"```toml\n(\[label\]\n.*?)```", doc, re.DOTALL).group(1).rstrip("\n")
    shipped = (REPO / "edprf_core" / "datasets" / "heart_disease_cleveland.schema.toml").read_text(encoding="utf-8")
    assert "classes = [0, 1, 2, 3, 4]" in shipped  # the shipped schema is the five-grade one
    text, n = re.subn(r"\[label\]\n.*?(?=\n\[\[features\]\])", lambda _: label, shipped, count=1, flags=re.DOTALL)
    assert n == 1
    schema = Schema.from_toml(text)
    assert schema.classes == (0, 1) and schema.label.column == "num"
    grades = pd.Series(["0", "1", "2", "3", "4", "2.0"])
    assert list(schema.read_labels(grades)) == [0, 1, 1, 1, 1, 1]
