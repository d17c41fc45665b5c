"""The CLI says the project's own warnings as one line ``PROG: warning: MESSAGE``, leaving every other
warning, and every filter, as Python has them."""

from __future__ import annotations

import warnings

import pytest

from edprf_core import EDPRFWarning
from edprf_core.schema import DraftedSchemaWarning
from edprf_fl.cli._warning_lines import warnings_as_lines


def test_a_project_warning_is_one_line_on_stderr(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with warnings_as_lines("edprf simulate"):
            warnings.warn("the schema was drafted", DraftedSchemaWarning, stacklevel=1)
    assert capsys.readouterr().err == "edprf simulate: warning: the schema was drafted\n"


def test_other_warnings_and_the_filters_are_left_as_they_were():
    hook = warnings.showwarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with warnings_as_lines("edprf x"):
            warnings.warn("not ours", DeprecationWarning, stacklevel=1)  # recorded by the outer block, as before
            with warnings.catch_warnings():
                warnings.simplefilter("error", EDPRFWarning)
                with pytest.raises(EDPRFWarning, match="raised"):
                    warnings.warn("raised", EDPRFWarning, stacklevel=1)
                warnings.simplefilter("ignore", EDPRFWarning)
                warnings.warn("ignored", EDPRFWarning, stacklevel=1)
    assert [(w.category, str(w.message)) for w in caught] == [(DeprecationWarning, "not ours")]
    assert warnings.showwarning is hook  # restored


def test_the_hook_is_restored_when_the_block_fails():
    hook = warnings.showwarning
    with pytest.raises(RuntimeError), warnings_as_lines("edprf x"):
        raise RuntimeError("stop")
    assert warnings.showwarning is hook
