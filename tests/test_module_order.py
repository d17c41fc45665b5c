"""The module order ./test.sh's workers take (tests/_module_order.py): longest first, each module kept together."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from tests._module_order import durations_to_seconds, module_seconds, order_longest_first


def _item(nodeid: str, marker: str | None = None):
    return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: name if name == marker else None)


def test_modules_run_longest_first_and_stay_together_in_their_own_order():
    items = [
        _item("tests/a.py::t1"),
        _item("tests/a.py::t2"),
        _item("tests/b.py::t1"),
        _item("tests/c.py::t1", "deployment"),  # not in the file: estimated from its marker (40 s)
        _item("tests/a.py::t3"),
        _item("tests/d.py::t1"),  # not in the file, no marker: 0.4 s
    ]
    order_longest_first(items, {"tests/a.py": 10.0, "tests/b.py": 99.0, "tests/d.py": 0.1})
    assert [i.nodeid for i in items] == [
        "tests/b.py::t1",
        "tests/c.py::t1",
        "tests/a.py::t1",
        "tests/a.py::t2",
        "tests/a.py::t3",
        "tests/d.py::t1",
    ]


def test_a_durations_log_gives_each_module_its_setup_call_and_teardown():
    log = (
        "12.50s call     tests/x.py::test_a[p1]\n"
        "2.00s setup    tests/x.py::test_a[p1]\n"
        "0.50s teardown tests/y.py::test_b\n"
        "(3 durations < 0.005s hidden)\n"
    )
    assert durations_to_seconds(log) == {"tests/x.py": 14.5, "tests/y.py": 0.5}


def test_the_checked_in_seconds_name_modules_that_exist():
    seconds = module_seconds()
    assert seconds, "tests/module_seconds.txt is missing or empty"
    repo = Path(__file__).resolve().parents[1]
    assert all(s >= 0 for s in seconds.values())
    gone = [m for m in seconds if not (repo / m).is_file()]
    assert len(gone) <= len(seconds) // 4, f"regenerate tests/module_seconds.txt: {gone}"
