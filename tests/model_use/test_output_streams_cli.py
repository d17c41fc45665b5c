"""``edprf``'s standard output and error as a script sees them (review rev-auto A9, A14, A15, A16): a reader that goes
away ends the command quietly with 141, a closed standard output is an error (exit 1), an encoding that cannot hold
a character never stops a command, a read-only HOME gives no matplotlib warning, no command is a usage error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from edprf_fl.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONIOENCODING", "MPLCONFIGDIR", "XDG_"))}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env | extra


def _edprf(*args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "edprf_fl.cli", *map(str, args)], **popen)


def test_a_reader_that_goes_away_ends_the_command_quietly_with_141(bank_model, tmp_path):
    rows = Path(bank_model["data"]).read_text().splitlines()
    data = tmp_path / "many.csv"
    data.write_text(rows[0] + "\n" + ("\n".join(rows[1:]) + "\n") * 10)  # far more than a pipe's buffer
    done = _edprf(
        "predict", bank_model["model"], data, "-o", "-", stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env()
    )
    assert done.stdout.readline().startswith(b"line,")  # `| head -1`
    done.stdout.close()
    err = done.stderr.read().decode()
    assert done.wait(timeout=300) == 141
    assert "Broken pipe" not in err and "Exception ignored" not in err and "error" not in err


def test_a_closed_stdout_is_an_error_not_a_silent_success(bank_model):
    command = [sys.executable, "-m", "edprf_fl.cli", "inspect", str(bank_model["model"])]
    done = subprocess.run(command, stdout=subprocess.DEVNULL, capture_output=False, env=_env(), check=False)
    assert done.returncode == 0  # open (to /dev/null): fine
    shell = "exec " + " ".join(f"'{part}'" for part in command) + " >&-"
    done = subprocess.run(["sh", "-c", shell], stderr=subprocess.PIPE, text=True, env=_env(), check=False)
    assert done.returncode == 1
    assert done.stderr.startswith("edprf inspect: error: standard output: closed (") and "> FILE" in done.stderr


@pytest.mark.parametrize(
    "argv", [["--help"], ["inspect", "--help"], ["--version"]], ids=["help", "inspect-help", "version"]
)
def test_help_and_version_to_a_closed_stdout_are_errors_too(argv):
    """argparse drops the errors of its help's writes: `edprf --help >&-` printed nothing and exited 0."""
    command = [sys.executable, "-m", "edprf_fl.cli", *argv]
    assert subprocess.run(command, stdout=subprocess.DEVNULL, env=_env(), check=False).returncode == 0
    shell = "exec " + " ".join(f"'{part}'" for part in command) + " >&-"
    done = subprocess.run(["sh", "-c", shell], stderr=subprocess.PIPE, text=True, env=_env(), check=False)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("edprf: error: standard output: closed (") and "> FILE" in done.stderr


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_character_the_output_encoding_lacks_is_escaped_not_an_error(bank_model, tmp_path, encoding):
    model = tmp_path / "model\u2013copy.edprf"  # the en dash: in neither ASCII nor Latin-1
    model.write_bytes(Path(bank_model["model"]).read_bytes())
    done = subprocess.run(
        [sys.executable, "-m", "edprf_fl.cli", "inspect", str(model)],
        capture_output=True,
        env=_env(PYTHONIOENCODING=encoding),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"file: {tmp_path}/model\\u2013copy.edprf".encode() in done.stdout


def test_simulate_writes_its_files_before_it_prints_its_results(tmp_path):
    """The results table printed first and failing (here: to a closed stdout) left no simulation.json."""
    out = tmp_path / "sim"
    command = f"exec '{sys.executable}' -m edprf_fl.cli simulate --parties 3 --no-baselines --output '{out}' >&-"
    done = subprocess.run(
        ["sh", "-c", command], stderr=subprocess.PIPE, text=True, env=_env(), timeout=600, check=False
    )
    assert done.returncode == 1 and "standard output: closed" in done.stderr
    assert (out / "simulation.json").is_file() and (out / "report.json").is_file()


def test_a_read_only_home_gives_no_matplotlib_warning(tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")  # HOME below a regular file: nothing can be created there, not even by root
    code = (
        "from edprf_fl.cli import main\n"
        "main(['inspect', '/nonexistent'])\n"  # any command: edprf's entry point chooses the directory
        "import matplotlib\n"
        "matplotlib.use('Agg')\n"
        "import matplotlib.pyplot\n"
        "print(matplotlib.get_configdir())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(HOME=str(blocker / "home")), check=True
    )
    assert done.stderr.startswith("edprf inspect: error:") and len(done.stderr.splitlines()) == 1  # no warning
    assert "edprf-matplotlib-" in done.stdout
    assert not Path(done.stdout.strip()).exists()  # removed at exit


def test_no_command_is_a_usage_error_said_on_stderr(capsys):
    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage: edprf")


def test_budget_leaves_a_gone_reader_and_a_closed_stdout_to_the_entry_point(tmp_path):
    """Final read of stop 67: budget's own catch-all turned both into 'error: [Errno 32] Broken pipe', exit 1."""
    from client import BudgetLedger

    ledger = BudgetLedger(tmp_path / "ledger.sqlite", cap=10.0)
    ledger.reserve("r/train", "release", 0.5)
    ledger.complete("r/train", b"x")
    done = _edprf("budget", ledger.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    done.stdout.close()  # the reader is gone before the command writes
    err = done.stderr.read().decode()
    assert done.wait(timeout=300) == 141 and err == ""
    command = [sys.executable, "-m", "edprf_fl.cli", "budget", str(ledger.path), "--json"]
    shell = "exec " + " ".join(f"'{part}'" for part in command) + " >&-"
    closed = subprocess.run(["sh", "-c", shell], stderr=subprocess.PIPE, text=True, env=_env(), check=False)
    assert closed.returncode == 1 and closed.stderr.startswith("edprf budget: error: standard output: closed (")
