"""docs/estimator.md's Python blocks run as pasted, in order, in one namespace (a notebook user's way).

Review rev-sk K9: the accounting block raised ``BudgetExceededError`` at its sixth line by design, so its
``GridSearchCV`` half never ran when pasted as one cell.  The figures the page states are checked too.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "estimator.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)


def test_every_block_runs_as_pasted(capsys):
    namespace: dict[str, object] = {}
    blocks = _blocks()
    assert len(blocks) >= 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the page's blocks warn on purpose (a seed, a scaler, a search)
        for i, code in enumerate(blocks):
            exec(compile(code, f"{PAGE.name} block {i}", "exec"), namespace)  # noqa: S102 - a failure names the block
    acc = namespace["acc"]  # the budget(10.0) block's accountant
    assert acc.total == 7.0 and namespace["search"].best_estimator_.dp_ is False
    assert "needs ε=1.0, the accountant has 0.0 of 3.0 left" in capsys.readouterr().out
