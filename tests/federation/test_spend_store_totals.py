"""The coordinator's spend record sums every row exactly, in one grouped pass (long-horizon review F6).

The record was read row by row in Python twice per run (:meth:`SpendStore.former_key_totals` at open, then
:meth:`SpendStore.totals`), 1.2 s each at 200,000 rows; it is now grouped in SQLite by party, key and the
amount's exact text, each group read as a Fraction once.  The figures must not change: every row counts, under
every key a party was recorded with, exactly.
"""

from __future__ import annotations

import random
import sqlite3
from fractions import Fraction

from server._spend_store import SpendStore

PARTIES = [f"hospital-{i:02d}" for i in range(8)]
CURRENT = {p: f"sha256:{i:064x}" for i, p in enumerate(PARTIES)}
FORMER = {p: f"sha256:{i + 100:064x}" for i, p in enumerate(PARTIES)}
AMOUNTS = [Fraction(1, 10), Fraction(1, 100), Fraction(1, 3), Fraction(2, 7), Fraction(123456789, 10**9), Fraction(5)]
"""Amounts a party's ledger charges (the shortest decimal of a float) and ones no float holds (1/3, 2/7): a sum in
floating point, or one that dropped a group's count, differs from the exact one."""


def test_totals_equal_an_exact_sum_by_hand_over_rotated_keys_and_many_rows(tmp_path):
    path = tmp_path / "spend-record.sqlite"
    store = SpendStore(path, CURRENT)
    rng = random.Random(20261130)  # fixed: the rows, not the code path
    rows, by_hand, former_by_hand = [], {p: Fraction(0) for p in PARTIES}, {}
    for n in range(20_000):
        party = rng.choice(PARTIES + ["gone-clinic"])  # a party no longer registered counts for no one
        rotated = party != "gone-clinic" and PARTIES.index(party) % 2 == 0 and n < 12_000  # even parties rotated
        key = "sha256:" + "f" * 64 if party == "gone-clinic" else (FORMER if rotated else CURRENT)[party]
        amount = rng.choice(AMOUNTS)
        # the same amount written as the store writes it (str of a Fraction), or as a decimal: both exact
        text = f"{float(amount)!r}" if amount.denominator in (10, 100, 10**9) and n % 3 == 0 else str(amount)
        rows.append((party, key, f"run-{n}/train", text, f"run-{n}", 1.7e9 + n))
        if party != "gone-clinic":
            by_hand[party] += amount
            if rotated:
                former_by_hand[party] = former_by_hand.get(party, Fraction(0)) + amount
    db = sqlite3.connect(path)
    with db:
        db.executemany("INSERT INTO releases VALUES (?, ?, ?, ?, ?, ?)", rows)
    db.close()
    assert store.add("hospital-01", "live/train", Fraction(1, 10), "live")  # and a row written by the store
    by_hand["hospital-01"] += Fraction(1, 10)

    reopened = SpendStore(path, CURRENT)
    assert reopened.rows() == 20_001
    assert reopened.totals() == by_hand
    assert reopened.former_key_totals() == former_by_hand
    assert set(former_by_hand) == {p for i, p in enumerate(PARTIES) if i % 2 == 0}
    assert all(Fraction(float(total)) != total for total in by_hand.values())  # no float holds any of the sums
    assert sum(reopened.key_totals().values()) == sum(by_hand.values())
    # with every key rotated away (a store opened with new keys) the totals stay, all of them former now
    rotated_all = SpendStore(path, {p: "sha256:" + "e" * 64 for p in PARTIES})
    assert rotated_all.totals() == by_hand == rotated_all.former_key_totals()
