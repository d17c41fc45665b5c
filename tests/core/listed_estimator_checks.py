"""scikit-learn's ``parametrize_with_checks`` with its cases as a list.

scikit-learn 1.8 hands ``pytest.mark.parametrize`` a generator, which pytest 9.2 warns about
(``PytestRemovedIn10Warning``) and pytest 10 will refuse; the suite's test extra does not cap pytest, so a
fresh install would then fail to collect the estimator checks.  The cases, their ids and their xfail marks are
scikit-learn's own.
"""

from __future__ import annotations

from typing import Any

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

__all__ = ["parametrize_with_listed_checks"]


def parametrize_with_listed_checks(estimators: list[Any], **options: Any) -> pytest.MarkDecorator:
    """``parametrize_with_checks(estimators, **options)``, its argument values materialised as a list."""
    mark = parametrize_with_checks(estimators, **options)
    argnames, argvalues = mark.args
    return pytest.mark.parametrize(argnames, list(argvalues), **mark.kwargs)
