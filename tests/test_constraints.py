"""constraints.txt pins one verified version of every package the project's installs pull in.

./test.sh, ./demo.sh and .ci/run install with ``-c constraints.txt``, and the container image from
deploy/requirements.lock, its hash-checked copy (tests/test_deploy_lock.py): a dependency
declared in pyproject.toml without a pin there would float to whatever the registry serves that day, and a
pin outside pyproject's range would make every install fail.
"""

from __future__ import annotations

import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.import_graph import REPO

INSTALLED_EXTRAS = ("federation", "deploy", "test", "dev", "docs")
"""The extras the scripts install with the constraints (the bench extra pins its own reference versions)."""


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: expected name==version, got {line!r}"
            assert canonicalize_name(name) not in pins, f"constraints.txt pins {name} twice"
            pins[canonicalize_name(name)] = Version(version)
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    return [Requirement(r) for r in [*project["dependencies"], *(r for e in INSTALLED_EXTRAS for r in extras[e])]]


def test_every_declared_dependency_is_pinned_within_its_declared_range():
    pins = _pins()
    for requirement in _declared():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not pinned in constraints.txt"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {name}=={pins[name]}, outside pyproject's {requirement}"
        )
    assert "edprf-fl" not in pins  # the project itself is installed from the checkout


def test_every_install_script_uses_the_constraints():
    for path, command in (
        ("scripts/ensure-venv.sh", "pip install --quiet -c constraints.txt -e"),
        (".ci/run", 'pip install --quiet -c "$slim/constraints.txt" "$slim"'),
        (".ci/run", "pip install --quiet -c constraints.txt -e '.[docs]'"),
    ):
        assert command in (REPO / path).read_text(encoding="utf-8"), (path, command)
    assert "!constraints.txt" in (REPO / "deploy/Dockerfile.dockerignore").read_text(encoding="utf-8")


def test_the_build_tools_and_pip_are_pinned_too():
    """pip does not apply ``-c constraints.txt`` inside build isolation, so the build backend's requirements are
    exact pins in pyproject.toml; every script that upgrades pip names the version (security review, supply
    chain: setuptools and wheel floated to the registry's newest, and pip too)."""
    requires = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["requires"]
    for requirement in map(Requirement, requires):
        specs = list(requirement.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", f"build-system requires {requirement}: expected name==X"
    text = (REPO / "scripts/ensure-venv.sh").read_text(encoding="utf-8")
    upgrades = [line for line in text.splitlines() if "--upgrade pip" in line]
    assert upgrades and all("pip==" in line for line in upgrades), upgrades
    # the container image takes pip from deploy/requirements.lock (tests/test_deploy_lock.py), never upgrades it
    assert "--upgrade pip" not in (REPO / "deploy/Dockerfile").read_text(encoding="utf-8")
