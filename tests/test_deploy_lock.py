"""deploy/requirements.lock: the container image's packages, each pinned with the SHA-256 of its files.

deploy/Dockerfile installs the lock with ``--require-hashes --no-deps`` and then edprf-fl itself with ``--no-deps
--no-build-isolation``: nothing outside the lock is resolved or fetched.  So the lock must hold exactly what
``pip install -c constraints.txt '.[deploy]'`` holds (a dependency missing from it would fail the build's
``pip check``; a stale version would install something CI never verified), the build backend, and pip.
scripts/write-deploy-lock.py writes it; these tests fail until it is re-run after a pin moves.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.import_graph import REPO
from tests.test_constraints import _pins

LOCK = REPO / "deploy" / "requirements.lock"
_ENTRY = re.compile(r"^([A-Za-z0-9._-]+)==(\S+)((?: \\\n    --hash=sha256:[0-9a-f]{64})+)\n", re.MULTILINE)


def _lock() -> dict[str, tuple[str, list[str]]]:
    """``name -> (version, hashes)``; every non-comment line belongs to an entry of the expected form."""
    text = LOCK.read_text(encoding="utf-8")
    body = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))
    entries = {}
    for match in _ENTRY.finditer(body):
        name = canonicalize_name(match[1])
        assert name not in entries, f"deploy/requirements.lock: {name} twice"
        entries[name] = (match[2], re.findall(r"sha256:([0-9a-f]{64})", match[3]))
    leftover = _ENTRY.sub("", body).strip()
    assert not leftover, f"deploy/requirements.lock: expected name==version and --hash lines, got {leftover[:200]!r}"
    return entries


def _requirements(distribution: str, extras: set[str]) -> list[Requirement]:
    """The installed ``distribution``'s requirements that apply here with ``extras`` requested."""
    wanted = []
    for text in metadata.distribution(distribution).requires or []:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or any(marker.evaluate({"extra": extra}) for extra in (extras or {""})):
            wanted.append(requirement)
    return wanted


def _deploy_closure() -> set[str]:
    """The packages ``pip install '.[deploy]'`` installs here (this Linux, this Python 3.11), from the installed
    packages' own metadata: edprf-fl's requirements with the ``deploy`` extra, then theirs, transitively."""
    seen: set[str] = set()
    todo = _requirements("edprf-fl", {"deploy"})
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        extras = set(requirement.extras)
        key = f"{name}[{','.join(sorted(extras))}]"
        if key in seen:
            continue
        seen.add(key)
        todo.extend(_requirements(name, extras))
    return {key.partition("[")[0] for key in seen}


def test_the_lock_holds_the_deploy_extra_the_build_backend_and_pip_at_the_verified_versions():
    lock = _lock()
    pins = _pins()
    build = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["requires"]
    backend = {canonicalize_name(r.name): next(iter(r.specifier)).version for r in map(Requirement, build)}
    (pip,) = set(re.findall(r"pip==([0-9.]+)", (REPO / "scripts/ensure-venv.sh").read_text(encoding="utf-8")))
    expected = {name: pins[name] for name in _deploy_closure()} | {n: Version(v) for n, v in backend.items()}
    expected["pip"] = Version(pip)
    assert {name: Version(version) for name, (version, _) in lock.items()} == expected, (
        "deploy/requirements.lock is out of date: run `.venv/bin/python scripts/write-deploy-lock.py`"
    )


def test_the_lock_holds_what_pyproject_declares_for_deploy_even_before_it_is_installed():
    """The closure above is read from the installed packages: a dependency just added to pyproject's ``deploy``
    extra (or to the base dependencies) and not yet installed would hide there (rev-s57 S3-13)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lock = _lock()
    for text in [*project["dependencies"], *project["optional-dependencies"]["deploy"]]:
        requirement = Requirement(text)
        if requirement.marker is None or requirement.marker.evaluate():
            name = canonicalize_name(requirement.name)
            assert name in lock and requirement.specifier.contains(lock[name][0], prereleases=True), (
                f"{requirement}: not in deploy/requirements.lock; run `.venv/bin/python scripts/write-deploy-lock.py`"
            )


def test_every_locked_package_lists_distinct_hashes():
    for name, (version, hashes) in _lock().items():
        assert hashes and len(set(hashes)) == len(hashes), f"{name}=={version}: {hashes}"


def test_the_image_installs_from_the_lock_alone():
    dockerfile = (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    installs = re.findall(r"pip install [^\\\n]*", dockerfile)
    assert installs == [
        "pip install --require-hashes --only-binary :all: --no-deps -r /src/deploy/requirements.lock ",
        "pip install --no-deps --no-build-isolation /src ",
    ]
    assert "COPY deploy/requirements.lock ./deploy/requirements.lock" in dockerfile
    ignore = (REPO / "deploy" / "Dockerfile.dockerignore").read_text(encoding="utf-8").splitlines()
    assert "!deploy/requirements.lock" in ignore
