"""The release artefacts hold what a hospital needs (review rev-pkg P2, P4, P8, P12, P15).

The sdist is the reviewed source release a party unpacks (renamed to ``edprf-fl``), installs from with its
``constraints.txt``, and builds its app bundle and its image from (deploy/README.md): it must hold the runbook's
files, every path ``deploy/Dockerfile`` copies, the tests with what they test, and nothing git ignores (a trial
deployment's keys and data); unpacked, it must build the checkout's app bundle, hash for hash.  The wheel holds
the five packages and their data, the wire-format spec included, and declares both licences it ships.

Both are built with setuptools' backend, as ``pip`` and ``python -m build`` call it (no network: the backend is
the running venv's), from a copy of the source tree where one file for each of .gitignore's patterns has been
planted; the wheel is built from the unpacked sdist, as ``python -m build`` builds it (about 3 s in all).  No
Flower process is started.
"""

from __future__ import annotations

import email
import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tomllib
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.import_graph import REPO, TOP_LEVEL

PLANTED = (
    "deploy/local/pki/ca.key",
    "deploy/local-trial/coordinator/superexec.secret",
    "deploy/party/hospital-a.key",
    "deploy/party/hospital-a/ledger.sqlite",
    "superexec.secret",
    "deploy/superlink.db",
    "superlink.db-wal",
    "edprf_fl.fab",
    "edprf-output/report.json",
    "docs/edprf-output/global-model.edprf",
    "edprf-consortium/parties/hospital-a/data.csv",
    "site/index.html",
    "venv/pyvenv.cfg",
    ".venv/pyvenv.cfg",
    "build/lib/protocol/__init__.py",
    "dist/edprf_fl-0.0.0.tar.gz",
    "benchmarks/results/speed.md.tmp",
    "tests/__pycache__/conftest.cpython-311.pyc",
    "client/_party.pyc",
    ".pytest_cache/README.md",
    ".hypothesis/examples/x",
)
"""Files of a trial deployment and a developer's litter, one for each of .gitignore's patterns: none may ship."""

RUNBOOK_FILES = (
    "constraints.txt",
    "deploy/README.md",
    "deploy/Dockerfile",
    "deploy/requirements.lock",
    "deploy/gateway/nginx.conf",
    "deploy/policy.example.toml",
    "protocol/release.proto",
    "mkdocs.yml",
    "demo.sh",
    "test.sh",
    "docs/index.md",
    "benchmarks/results/speed.md",
)
"""Files the runbook, the image, the docs site and the README's two commands use from a source tree."""

LICENCE_FILES = ("LICENSE", "edprf_core/datasets/NOTICE.md")
LICENCE_EXPRESSION = "Apache-2.0 AND CC-BY-4.0"

_IGNORED_COPY = shutil.ignore_patterns(
    ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache"
)
"""Left out of the source copy (a developer's venv is large); a file planted for each checks the manifest."""


@dataclass(frozen=True)
class Release:
    sdist: Path
    wheel: Path
    unpacked: Path
    """The sdist unpacked and renamed to ``edprf-fl``, as the runbook says (Flower refuses ``edprf_fl-X``)."""
    members: frozenset[str]
    """The sdist's files, relative to its top directory."""


def _build(kind: str, source: Path, out: Path) -> Path:
    code = f"from setuptools import build_meta as b; print(b.build_{kind}({str(out)!r}))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=source, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return out / result.stdout.strip().splitlines()[-1]


def _unpack(sdist: Path, into: Path, name: str) -> Path:
    into.mkdir()
    with tarfile.open(sdist) as archive:
        archive.extractall(into, filter="data")
    [top] = into.iterdir()
    return top.rename(into / name)


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools (the build backend) is not installed")
    root = tmp_path_factory.mktemp("release")
    source = root / "source"
    shutil.copytree(REPO, source, ignore=_IGNORED_COPY)
    for name in PLANTED:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text("planted: must not ship\n")
    dist = root / "dist"
    dist.mkdir()
    sdist = _build("sdist", source, dist)
    wheel = _build("wheel", _unpack(sdist, root / "wheel-source", "edprf-fl"), dist)
    unpacked = _unpack(sdist, root / "app", "edprf-fl")
    members = frozenset(
        p.relative_to(unpacked).as_posix() for p in unpacked.rglob("*") if p.is_file() or p.is_symlink()
    )
    return Release(sdist, wheel, unpacked, members)


def _git(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs a git checkout (run from the repository, not from an unpacked sdist)")
    return subprocess.run(
        ["git", "-C", str(REPO), *args], input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


def _dockerfile_copies(dockerfile: str) -> list[str]:
    """The source paths of the Dockerfile's ``COPY`` instructions that read the build context (not ``--from``)."""
    sources = []
    for line in dockerfile.replace("\\\n", " ").splitlines():
        if line.split()[:1] != ["COPY"]:
            continue
        words = shlex.split(line, comments=True)
        flags = [w for w in words[1:] if w.startswith("--")]
        if any(flag.startswith("--from") for flag in flags):
            continue
        paths = [w for w in words[1:] if not w.startswith("--")]
        sources += paths[:-1]
    return sources


def test_the_sdist_holds_the_runbooks_files_and_every_path_the_dockerfile_copies(release: Release):
    missing = [name for name in RUNBOOK_FILES if name not in release.members]
    assert missing == [], missing
    assert "edprf_fl/_pinned_clientapp.py" in release.members  # the party's app pin (the Dockerfile copies it too)
    copies = _dockerfile_copies((release.unpacked / "deploy" / "Dockerfile").read_text(encoding="utf-8"))
    assert {"constraints.txt", "deploy/requirements.lock", "edprf_core"} <= set(copies), copies
    absent = [
        path
        for path in copies
        if not (release.unpacked / path).is_file() and not any((release.unpacked / path).rglob("*.py"))
    ]
    assert absent == [], f"deploy/Dockerfile copies what the sdist lacks: {absent}"


def test_the_sdist_carries_every_tracked_file_of_the_source_tree_but_the_plots(release: Release):
    """Tests, docs, examples, scripts, the deploy files and the benchmarks, so each test it carries has what it
    tests (P12); only the benchmarks' plots are left out (about 1 MB; the results they draw ship)."""
    tracked = set(_git("ls-files", "-z").stdout.split("\0")) - {""}
    missing = sorted(
        name for name in tracked - release.members if not re.fullmatch(r"benchmarks/results/.*\.png", name)
    )
    assert missing == [], missing
    assert not any(name.endswith(".png") for name in release.members)


def test_nothing_git_ignored_ships(release: Release):
    """A trial deployment's keys, ledgers and data, Flower's bundles, a venv, caches: none is in the sdist."""
    planted = [name for name in PLANTED if name in release.members]
    assert planted == [], planted
    # each planted file is one git ignores: the list follows .gitignore
    listed = _git("check-ignore", "--no-index", "--stdin", stdin="\n".join(PLANTED) + "\n").stdout.splitlines()
    assert sorted(listed) == sorted(PLANTED), sorted(set(PLANTED) - set(listed))
    # and nothing else the sdist holds is (setuptools' own metadata, the egg-info directory, aside)
    shipped = sorted(name for name in release.members if not name.startswith("edprf_fl.egg-info/"))
    ignored = _git("check-ignore", "--stdin", stdin="\n".join(shipped) + "\n").stdout.splitlines()
    assert ignored == [], ignored


def test_the_unpacked_sdist_builds_the_checkouts_app_bundle(release: Release):
    """The bundle's files are chosen by pyproject's fab-include, not by the manifest: the runbook's `flwr build` of
    the unpacked release gives the hash parties pin from the checkout (P4)."""
    pytest.importorskip("flwr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # typer's and pathspec's, raised inside flwr
        from flwr.cli.build import build_fab_from_disk

        assert build_fab_from_disk(release.unpacked) == build_fab_from_disk(REPO)


def test_the_wheel_holds_the_five_packages_their_data_and_the_wire_format_spec(release: Release):
    names = zipfile.ZipFile(release.wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    [info] = [top for top in tops if top.endswith(".dist-info")]
    assert tops - {info} == set(TOP_LEVEL), sorted(tops)  # no tests/, benchmarks/, deploy/ or docs/
    assert "protocol/release.proto" in names and "protocol/regenerate.py" in names  # the tool and what it reads
    assert {"edprf_core/datasets/wall_robot_navigation.csv.gz", "edprf_core/datasets/NOTICE.md"} <= set(names)
    proto = zipfile.ZipFile(release.wheel).read("protocol/release.proto")
    assert proto == (REPO / "protocol" / "release.proto").read_bytes()


def test_both_artefacts_declare_the_code_and_the_data_licence(release: Release):
    """Apache-2.0 for the code, CC BY 4.0 for the embedded datasets (P8), each with its file."""
    wheel = zipfile.ZipFile(release.wheel)
    info = next(name.split("/")[0] for name in wheel.namelist() if name.endswith(".dist-info/METADATA"))
    for raw in (wheel.read(f"{info}/METADATA"), (release.unpacked / "PKG-INFO").read_bytes()):
        metadata = email.message_from_bytes(raw)
        assert metadata["License-Expression"] == LICENCE_EXPRESSION
        assert metadata.get_all("License-File") == list(LICENCE_FILES)
        assert metadata["License"] is None  # the expression, not the legacy free-text field
    for name in LICENCE_FILES:
        assert wheel.read(f"{info}/licenses/{name}") == (REPO / name).read_bytes()
        assert name in release.members


def test_the_licence_expression_is_the_projects():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == LICENCE_EXPRESSION and project["license-files"] == list(LICENCE_FILES)
    assert all((REPO / name).is_file() for name in LICENCE_FILES)


def test_every_file_the_manifest_names_exists():
    """A file moved or renamed (the pin launcher, say) leaves no include line behind that silently matches nothing."""
    stale = []
    for line in (REPO / "MANIFEST.in").read_text(encoding="utf-8").splitlines():
        words = line.split("#", 1)[0].split()
        if words and words[0] in ("include", "graft"):
            stale += [pattern for pattern in words[1:] if not list(REPO.glob(pattern))]
    assert stale == [], f"MANIFEST.in names what the tree lacks: {stale}"
