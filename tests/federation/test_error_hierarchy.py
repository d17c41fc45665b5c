"""One exception hierarchy: every error class the project defines derives from ``EDPRFError``.

The five packages are walked with :mod:`pkgutil`, so an error class added later in any module
(not only the ones listed today) fails this test until it joins the hierarchy.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types

import pytest

import client
import edprf_core
import edprf_fl
import protocol
import server
from edprf_core import EDPRFError, EDPRFWarning

PACKAGES = (edprf_core, protocol, client, server, edprf_fl)


def _modules() -> list[types.ModuleType]:
    found = []
    for package in PACKAGES:
        found.append(package)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            if info.name.rsplit(".", 1)[-1] in ("__main__", "regenerate"):
                continue  # scripts: importing them runs them
            found.append(importlib.import_module(info.name))
    return found


def _defined_here(base: type[BaseException]) -> dict[str, type]:
    """Classes derived from ``base`` whose ``__module__`` is the module that defines them."""
    out = {}
    for module in _modules():
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, base) and obj.__module__ == module.__name__:
                out[f"{module.__name__}.{name}"] = obj
    return out


def test_walk_finds_the_known_errors() -> None:
    found = _defined_here(Exception)
    for name in (
        "edprf_core._exceptions.SchemaError",
        "edprf_core._accountant.BudgetExceededError",
        "edprf_core._tree.TreeStructureError",
        "protocol._errors.InvalidRelease",
        "client._party.Refusal",
        "client._ledger.BudgetExhausted",
        "server._run_control.RunFailed",
        "edprf_fl.cli._flower_processes.FlowerProcessError",
        "edprf_fl.cli._inspect_limits.BeyondLimits",
    ):
        assert any(key.endswith(name.rsplit(".", 1)[1]) for key in found), name


def test_every_error_class_derives_from_the_root() -> None:
    errors = {k: v for k, v in _defined_here(Exception).items() if not issubclass(v, Warning)}
    assert errors
    outside = sorted(name for name, cls in errors.items() if not issubclass(cls, EDPRFError))
    assert outside == []


def test_every_warning_class_derives_from_the_root_warning() -> None:
    warnings_ = _defined_here(Warning)
    assert {cls.__name__ for cls in warnings_.values()} >= {
        "PrivacyLeakWarning",
        "DomainClippingWarning",
        "EDPRFWarning",
    }
    assert all(issubclass(cls, EDPRFWarning) for cls in warnings_.values())
    assert issubclass(EDPRFWarning, UserWarning)


@pytest.mark.parametrize(
    ("name", "builtin"),
    [
        ("SchemaError", ValueError),
        ("DataValidationError", ValueError),
        ("BudgetError", ValueError),
        ("BudgetExceededError", ValueError),
        ("TreeStructureError", ValueError),
        ("BudgetExhausted", ValueError),
        ("OutputDirInUse", ValueError),
        ("RunFailed", RuntimeError),
        ("FlowerProcessError", RuntimeError),
        ("TaskError", ValueError),
    ],
)
def test_the_builtin_second_base_stays(name: str, builtin: type) -> None:
    """Callers that catch ValueError / RuntimeError keep catching these (looked up by class name)."""
    (cls,) = {c for c in _defined_here(Exception).values() if c.__name__ == name}
    assert issubclass(cls, EDPRFError)
    assert issubclass(cls, builtin)
