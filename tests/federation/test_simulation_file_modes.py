"""``edprf simulate --data`` keeps the copies it makes of the user's rows to the user's own account.

Security review finding 1: the per-party ``data.csv``, ``test.csv`` and ``validation.csv`` (the input's rows, split)
and ``simulation.json`` came out 0644 in 0755 directories under the common umask 022, although the input was 0600.
Now every directory the simulation creates is 0700 and every file it writes 0600, whatever the umask, as the
coordinator's model and report already were.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from edprf_core import load_embedded
from edprf_fl.cli._main import main


def _own_data(tmp_path: Path) -> tuple[Path, Path]:
    """300 rows of the embedded data as a user's own 0600 file, and its schema."""
    X, y, schema = load_embedded()
    rows = X.iloc[:300].assign(**{schema.label.column: y.iloc[:300].to_numpy()})
    data, schema_path = tmp_path / "mydata.csv", tmp_path / "mydata.schema.toml"
    rows.to_csv(data, index=False)
    os.chmod(data, 0o600)
    schema.save(schema_path)
    return data, schema_path


def _modes_under(root: Path) -> dict[str, str]:
    """Every directory and file under ``root`` (``root`` too) with the permission bits it has."""
    found = {".": oct(stat.S_IMODE(root.stat().st_mode))}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = oct(stat.S_IMODE(path.lstat().st_mode))
    return found


def _not_owner_only(modes: dict[str, str], root: Path) -> dict[str, str]:
    return {name: mode for name, mode in modes.items() if mode != ("0o700" if (root / name).is_dir() else "0o600")}


def test_everything_a_simulation_on_the_user_s_data_writes_is_owner_only(tmp_path, permissive_umask, capsys):
    data, schema = _own_data(tmp_path)
    out = tmp_path / "runs" / "out"  # `runs` is missing too: created owner-only as well
    argv = ["simulate", "--data", str(data), "--schema", str(schema), "--parties", "2", "--max-depth", "2"]
    argv += ["--n-bins", "4", "--seeded-noise", "--validation-size", "0.2", "--output", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    modes = _modes_under(out)
    written = {"workspace/party-0000/data.csv", "workspace/test.csv", "workspace/validation.csv", "simulation.json"}
    written |= {"contributions.md", "report.json", "global-model.edprf"}
    assert written <= modes.keys()  # the copies of the input's rows and the report the review named
    assert _not_owner_only(modes, out) == {}
    assert oct(stat.S_IMODE((tmp_path / "runs").stat().st_mode)) == "0o700"


def test_the_prepared_workspace_and_run_config_are_owner_only(tmp_path, permissive_umask, capsys):
    data, schema = _own_data(tmp_path)
    out = tmp_path / "prepared"
    argv = ["simulate", "--prepare-only", "--data", str(data), "--schema", str(schema), "--parties", "2"]
    assert main([*argv, "--max-depth", "2", "--output", str(out)]) == 0, capsys.readouterr().err
    modes = _modes_under(out)
    assert {"run-config.toml", "workspace/party-0001/data.csv", "workspace/party-0001/policy.toml"} <= modes.keys()
    assert _not_owner_only(modes, out) == {}


def test_an_existing_output_directory_keeps_its_mode(tmp_path, permissive_umask, capsys):
    """The user chose it (perhaps shared with a group on purpose); what the run writes in it is owner-only."""
    data, schema = _own_data(tmp_path)
    out = tmp_path / "shared"
    out.mkdir()
    os.chmod(out, 0o750)
    argv = ["simulate", "--prepare-only", "--data", str(data), "--schema", str(schema), "--parties", "2"]
    assert main([*argv, "--max-depth", "2", "--output", str(out)]) == 0, capsys.readouterr().err
    modes = _modes_under(out)
    assert modes.pop(".") == "0o750"
    assert _not_owner_only(modes, out) == {}
