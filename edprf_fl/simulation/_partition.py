"""Split a dataset among simulated parties: IID, Dirichlet label skew, or by a column."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Partitioning", "partition_rows", "partition_summary", "partition_warnings"]


@dataclass(frozen=True)
class Partitioning:
    """How rows go to parties.

    kind : {"iid", "dirichlet", "column"}
    alpha : float > 0
        Dirichlet concentration (label skew; smaller is more skewed).
    column : str
        For ``column``: rows with the same value go to the same party.
    """

    kind: str = "iid"
    alpha: float = 0.5
    column: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("iid", "dirichlet", "column"):
            raise ValueError(f"partitioning must be iid, dirichlet or column, got {self.kind!r}")
        if self.kind == "dirichlet" and not self.alpha > 0:
            raise ValueError(f"dirichlet alpha must be > 0, got {self.alpha}")
        if self.kind == "column" and not self.column:
            raise ValueError("column partitioning needs a column name")

    def describe(self) -> str:
        return {
            "iid": "IID",
            "dirichlet": f"Dirichlet label skew (alpha={self.alpha:g})",
            "column": f"by column {self.column!r}",
        }[self.kind]


def partition_rows(
    frame: pd.DataFrame, labels: pd.Series, n_parties: int, how: Partitioning, rng: np.random.Generator
) -> list[np.ndarray]:
    """Row positions of each party (disjoint, covering every row)."""
    n = len(frame)
    if n_parties < 1:
        raise ValueError(f"n_parties must be >= 1, got {n_parties}")
    if n < n_parties:
        raise ValueError(f"{n} rows cannot be split among {n_parties} parties")
    if how.kind == "iid":
        return [np.sort(p) for p in np.array_split(rng.permutation(n), n_parties)]
    if how.kind == "column":
        if how.column not in frame.columns:
            raise ValueError(f"column {how.column!r} is not in the data")
        codes, uniques = pd.factorize(frame[how.column].astype(str), sort=True)
        if len(uniques) < n_parties:
            raise ValueError(f"column {how.column!r} has {len(uniques)} values, fewer than {n_parties} parties")
        owner = rng.permutation(len(uniques)) % n_parties
        party_of_row = owner[codes]
        return [np.flatnonzero(party_of_row == p) for p in range(n_parties)]
    y = pd.factorize(labels)[0]
    parts: list[list[np.ndarray]] = [[] for _ in range(n_parties)]
    for k in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == k))
        shares = rng.dirichlet(np.full(n_parties, how.alpha))
        cuts = (np.cumsum(shares)[:-1] * rows.size).astype(int)
        for p, chunk in enumerate(np.split(rows, cuts)):
            parts[p].append(chunk)
    out = [np.sort(np.concatenate(p)) for p in parts]
    # every party needs at least one row: move one from the largest party
    for p in range(n_parties):
        if out[p].size == 0:
            donor = int(np.argmax([o.size for o in out]))
            out[p], out[donor] = out[donor][:1], out[donor][1:]
    return out


def partition_summary(
    labels: pd.Series, parts: list[np.ndarray], classes: list, holdout: float = 0.0
) -> dict[str, dict[str, object]]:
    """The partition a run realised: per party (``party-NNNN``) its ``rows``, its ``class_counts`` (every class of
    ``classes``, zeros too) and its ``training_rows`` after its hold-out (its rows without one; None with one: the
    party draws its hold-out with a secret salt of its own) with the ``expected_training_rows``.

    Exact counts, not noised: a simulation's record on the researcher's own data, written to the run's
    owner-only ``simulation.json`` and never sent anywhere (no party releases it).
    """
    from ._prepare import expected_training_rows

    out = {}
    for p, rows in enumerate(parts):
        counts = labels.iloc[rows].astype(str).value_counts()
        out[f"party-{p:04d}"] = {
            "rows": len(rows),
            "class_counts": {str(c): int(counts.get(str(c), 0)) for c in classes},
            "training_rows": len(rows) if holdout <= 0 else None,
            "expected_training_rows": expected_training_rows(len(rows), holdout) if len(rows) else 0,
        }
    return out


def partition_warnings(summary: dict[str, dict[str, object]]) -> list[str]:
    """A line per party that trains on no rows, or on fewer rows than there are classes (its ``training_rows``,
    else its ``expected_training_rows``)."""
    lines = []
    for party, block in summary.items():
        n_classes = len(block["class_counts"])  # type: ignore[arg-type]
        known = block["training_rows"]
        rows = known if known is not None else block["expected_training_rows"]
        what = "trains on" if known is not None else "is expected to train on"
        if rows == 0:
            lines.append(f"warning: {party} {what} 0 rows (it holds {block['rows']}): the partition left it empty")
        elif rows < n_classes:  # type: ignore[operator]
            lines.append(
                f"warning: {party} {what} {rows} rows, fewer than the {n_classes} classes (it holds {block['rows']})"
            )
    return lines
