"""``edprf run``: submit the coordinator's run, follow it, exit with its outcome; Ctrl-C stops it.

``flwr run --stream`` (Flower 1.41) exits 0 when the run failed, and on Ctrl-C stops only the
log stream while the run goes on charging every party.  This wrapper uses Flower's own commands:

1. ``flwr run APP [CONNECTION] --run-config ... --format json`` submits the run (its id is read
   from the JSON);
2. ``flwr log RUN_ID [CONNECTION] --stream`` shows the ServerApp's log until the run ends;
3. ``flwr ls [CONNECTION] --run-id RUN_ID --format json`` reads the final status: exit 0 for
   ``finished:completed``, 1 otherwise, with Flower's details (the report's ``failure`` text);
4. on Ctrl-C, SIGTERM or SIGHUP it stops the run with ``flwr stop`` and says so
   (``--detach-on-interrupt``: leave it running and print the command that stops it); exit 130
   (143 on SIGTERM, 129 on SIGHUP).

Before submitting, one TLS handshake with the connection's address and root certificates (as ``edprf party check
--superlink`` makes; nothing is sent): an expired SuperLink certificate is named, with the coordinator's renewal
step, instead of Flower's "Connection to the SuperLink is unavailable", and one that expires within 30 days is warned
of (review rev-day2 U3).

A run still pending after 30 s (no SuperExec has taken it: the stream shows nothing meanwhile) gets one line
saying so, naming ``flower-superexec`` and the command that cancels the run.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from edprf_fl import quiet_flwr

__all__ = ["FLOWER_INSTALL", "FlowerRun", "check_superlink_certificate", "flwr_command", "register", "run_and_follow"]

_STATUS_WAIT = 30.0  # the log stream can end a moment before the run's status is final
_FLOWER_FAILURE_PREFIX = "ServerApp failed with exception: "  # Flower 1.41's status details of a failed run


def register(sub: argparse._SubParsersAction) -> None:
    from ._exit_text import exit_epilog

    p = sub.add_parser(
        "run",
        epilog=exit_epilog(
            "0 the run finished and completed; 1 it failed, was stopped, or Flower could not submit it (the SuperLink "
            "not reached), or --fail-on-refusal could not read the run's report.json; 6 with --fail-on-refusal: the "
            "run completed, but a party refused or was silent"
        ),
        help="run the coordinator (flwr run) and exit with the run's outcome; Ctrl-C stops it",
        description="Submit the edprf app to a SuperLink with `flwr run`, stream its log, and exit "
        "0 only if the run completed. Ctrl-C stops the run (flwr stop) unless "
        "--detach-on-interrupt is given.",
    )
    p.add_argument("app", nargs="?", default=".", help="the app: a directory with pyproject.toml (default: .)")
    p.add_argument(
        "connection",
        nargs="?",
        default=None,
        help="the SuperLink connection in $FLWR_HOME/config.toml (default: its default connection)",
    )
    p.add_argument(
        "--run-config",
        default=None,
        metavar="CONFIG",
        help="the run config, as for flwr run: \"schema-path='...' output-dir='...' epsilon=1.0\"",
    )
    p.add_argument(
        "--detach-on-interrupt",
        action="store_true",
        help="on Ctrl-C leave the run going (and print how to stop it) instead of stopping it",
    )
    add_script_options(p)
    p.set_defaults(handler=run_command)


def add_script_options(p: argparse.ArgumentParser) -> None:
    """``--json`` and ``--fail-on-refusal``, as ``run`` and ``consortium`` take them (review rev-auto A6, A7)."""
    p.add_argument(
        "--json",
        action="store_true",
        help="end with one JSON object on standard output (status, run id, output directory, report.json's path, "
        "each party's status: docs/reference/run-summary-json.md); everything else goes to standard error",
    )
    p.add_argument(
        "--fail-on-refusal",
        action="store_true",
        help="exit 6 when the run completed but a party refused or was silent (as its report.json says; the "
        "output-dir must be readable here); each refusal is logged at WARNING either way",
    )


FLOWER_INSTALL = "pip install 'edprf-fl[deploy]'"
"""What installs Flower's commands (``flwr``, ``flower-superlink``, ...) next to ``edprf``: the ``deploy`` extra (the
``federation`` extra has them too, with the simulation's Ray); a plain ``pip install edprf-fl`` has none."""


def flwr_command() -> str:
    """The `flwr` next to this Python, else the one on PATH.

    Raises
    ------
    ValueError
        Neither exists: the extra to install is named (review rev-pkg P7: a plain install said only "flwr: No such
        file or directory").
    """
    local = Path(sys.executable).parent / "flwr"
    if local.is_file():
        return str(local)
    found = shutil.which("flwr")
    if found is None:
        raise ValueError(
            f"flwr is not installed next to {sys.executable} nor on PATH: this command runs a federation and needs "
            f"Flower's command line: {FLOWER_INSTALL}"
        )
    return found


@dataclass
class RunProgress:
    """What :func:`run_and_follow` learned of its run, filled in as it goes, for a caller's summary."""

    run_id: int | None = None
    """Flower's id of the submitted run (None until it was submitted)."""
    status: str = ""
    """Flower's final status (``finished:completed``, ``finished:failed``, ...), or ``interrupted``."""
    details: str = ""
    """Flower's details of a run that did not complete (the ServerApp's failure), or what an interrupt did."""


@dataclass
class FlowerRun:
    """A submitted run: its id, and the connection it was submitted through."""

    run_id: int
    connection: str | None

    def _conn(self) -> list[str]:
        return [self.connection] if self.connection else []

    def status(self, env: dict[str, str] | None = None) -> tuple[str, str]:
        """(status, details) from `flwr ls --run-id`, e.g. ("finished:failed", "ServerApp failed with ...")."""
        from ._flower_processes import json_in

        proc = subprocess.run(
            [flwr_command(), "ls", *self._conn(), "--run-id", str(self.run_id), "--format", "json"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        try:
            row = json_in(proc.stdout)["runs"][0]
        except (ValueError, KeyError, IndexError):
            return "unknown", (proc.stdout + proc.stderr).strip()[-500:]
        return str(row.get("status", "unknown")), str(row.get("status-details", "") or "")

    def final_status(self, env: dict[str, str] | None = None) -> tuple[str, str]:
        deadline = time.monotonic() + _STATUS_WAIT
        while True:
            status, details = self.status(env)
            if status.startswith("finished") or time.monotonic() >= deadline:
                return status, details
            time.sleep(1.0)

    def stop(self, env: dict[str, str] | None = None) -> tuple[int, str]:
        proc = subprocess.run(
            [flwr_command(), "stop", str(self.run_id), *self._conn()],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        return proc.returncode, (proc.stdout + proc.stderr).strip()


def submit(app: str, connection: str | None, run_config: str | None, env: dict[str, str] | None = None) -> FlowerRun:
    """`flwr run ... --format json`; raises ValueError with Flower's output when it is refused."""
    from ._bundle_staging import staged_app
    from ._flower_processes import json_in

    if run_config:
        check_run_config_keys(app, run_config)
    with staged_app(app) as bundle_dir:  # the bundle's files alone: Flower would list a whole checkout's .venv
        argv = [flwr_command(), "run", bundle_dir, *([connection] if connection else []), "--format", "json"]
        if run_config:
            argv += ["--run-config", run_config]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, check=False)
    try:
        payload = json_in(proc.stdout)
        return FlowerRun(int(payload["run-id"]), connection)
    except (ValueError, KeyError, TypeError):
        text = (proc.stdout + proc.stderr).strip().replace(bundle_dir, app)  # the copy is gone: name the app
        raise ValueError(f"flwr run did not start a run (exit {proc.returncode}): {text[-2000:]}") from None


def _connection_tls(connection: str | None, env: dict[str, str] | None) -> tuple[str, Path] | None:
    """The address and root certificates of ``connection`` (None: the default one) in ``$FLWR_HOME/config.toml``,
    read as Flower reads them (``FLWR_HOME``, else ``~/.flwr``); None when there is nothing to check: no such file
    or connection, an insecure one, or one without ``root-certificates`` (Flower then says what is wrong)."""
    import tomllib

    home = (os.environ if env is None else env).get("FLWR_HOME") or str(Path.home() / ".flwr")
    try:
        with (Path(home) / "config.toml").open("rb") as file:
            config = tomllib.load(file)
    except (OSError, tomllib.TOMLDecodeError):
        return None
    links = config.get("superlink")
    name = connection or (links.get("default") if isinstance(links, dict) else None)
    link = links.get(name) if isinstance(links, dict) and isinstance(name, str) else None
    if not isinstance(link, dict) or link.get("insecure"):
        return None
    address, roots = link.get("address"), link.get("root-certificates")
    if not (isinstance(address, str) and address and isinstance(roots, str) and roots):
        return None
    return address, Path(roots)


RENEWAL_STEP = (
    "the coordinator renews it (deploy/README.md section 7: `openssl x509 -noout -enddate -in $COORD/pki/server.pem` "
    "shows its end date; `edprf certs server --force ...` makes a new one; then restart the SuperLink and SuperExec)"
)
"""The coordinator's step for a SuperLink certificate that has expired or is about to."""

RUN_CHECK_SECONDS = 2.0
"""How long :func:`check_superlink_certificate` waits for the SuperLink to accept the connection, and then for the
TLS handshake (review rev-s65 F6: with the party check's 5 s each, a SuperLink that does not answer held ``edprf
run`` up to 10 s before Flower's own error).  A SuperLink that answers does so in milliseconds, on a WAN in well
under a second; one that does not answer within it is left to Flower, which says so itself."""


def check_superlink_certificate(connection: str | None, env: dict[str, str] | None = None) -> None:
    """One TLS handshake with the SuperLink of ``connection``, with its root certificates, before a run is
    submitted (:func:`client.superlink_handshake`, as ``edprf party check --superlink`` makes; nothing is sent).

    A certificate outside its validity dates raises (every ``flwr`` command would say only "Connection to the
    SuperLink is unavailable"); one that verifies but expires within :data:`client.EXPIRY_NOTE_DAYS` days gets a
    warning on stderr.  Any other outcome (no answer within :data:`RUN_CHECK_SECONDS`, another CA, no TLS) is left
    to Flower, which reports it itself.

    Raises
    ------
    ValueError
        The SuperLink's certificate (or one of its chain) has expired, or is not valid yet: its date, this host's
        clock and the coordinator's step.
    """
    tls = _connection_tls(connection, env)
    if tls is None:
        return
    from client import EXPIRY_NOTE_DAYS, superlink_handshake, time_left_text

    address, roots = tls
    try:
        found = superlink_handshake(address, roots, timeout=RUN_CHECK_SECONDS)
    except ValueError:  # an address this check does not split: Flower says what it makes of it
        return
    now = dt.datetime.now(dt.UTC)
    clock = f"this host's clock reads {now:%Y-%m-%d %H:%M} UTC"
    unavailable = (
        "every flwr command (flwr ls, flwr stop, flwr run) says only 'Connection to the SuperLink is unavailable'"
    )
    if found.failure == "dates":
        kind, date = found.out_of_dates(now)
        if kind == "not yet valid":
            since = f" before {date:%Y-%m-%d %H:%M} UTC" if date is not None else ""
            raise ValueError(
                f"the SuperLink's certificate at {address} is not valid{since} ({clock}): {unavailable}. No run "
                "was submitted. If this host's clock is right, the certificate was issued with a wrong clock: "
                + RENEWAL_STEP
            )
        if kind == "expired":
            raise ValueError(
                f"the SuperLink's certificate at {address} expired on {date:%Y-%m-%d %H:%M} UTC ({clock}): "
                f"{unavailable}, and a SuperNode that connects exits with code 305. No run was submitted; "
                + RENEWAL_STEP
            )
        raise ValueError(
            f"a certificate of the SuperLink's chain at {address} has expired ({clock}), the CA certificate or an "
            f"intermediate: {unavailable}. No run was submitted. Check `openssl x509 -noout -enddate -in {roots}` "
            "(the connection's root-certificates) and the CA's (deploy/README.md section 7)"
        )
    if found.failure is None and found.not_after is not None:
        left = found.not_after - now
        if left <= dt.timedelta(days=EXPIRY_NOTE_DAYS):
            _tell(
                f"edprf run: warning: the SuperLink's certificate at {address} expires on "
                f"{found.not_after:%Y-%m-%d %H:%M} UTC, {time_left_text(left)}: {RENEWAL_STEP}. Once it has "
                f"expired {unavailable}, and every SuperNode that connects exits with code 305"
            )


def check_run_config_keys(app: str, run_config: str) -> None:
    """Refuse a run config key the app does not declare, naming it and the closest declared key.

    Flower refuses such a run only after submitting it, with "Invalid run configuration" and no key named.
    Checked when ``app`` is a directory holding the app's ``pyproject.toml`` (its ``[tool.flwr.app.config]``).
    """
    import difflib

    from client import parse_node_config

    declared = _app_config(app)
    if declared is None:
        return  # no app directory, or not an app's pyproject: Flower says what is wrong
    pyproject = Path(app) / "pyproject.toml"
    given = parse_node_config(run_config, option="--run-config")
    unknown = [key for key in given if key not in declared]
    if unknown:
        close = {k: difflib.get_close_matches(k, list(declared), n=1) for k in unknown}
        hints = "; ".join(f"{k!r}: did you mean {c[0]!r}?" for k, c in close.items() if c)
        raise ValueError(
            f"--run-config: unknown keys {unknown}"
            + (f" ({hints})" if hints else "")
            + f"; the app's keys are in [tool.flwr.app.config] of {pyproject} (docs/reference/run-config.md)"
        )


def _app_config(app: str) -> dict | None:
    """The ``[tool.flwr.app.config]`` of the app directory ``app`` (its keys and defaults); None when ``app`` is no
    directory holding an app's ``pyproject.toml``."""
    import tomllib

    pyproject = Path(app) / "pyproject.toml"
    if not pyproject.is_file():
        return None
    try:
        declared = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["flwr"]["app"]["config"]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError):
        return None
    return declared if isinstance(declared, dict) else None


def follow(run: FlowerRun, out=None, env: dict[str, str] | None = None) -> None:
    """Copy `flwr log --stream` of ``run`` to ``out`` until the run ends.

    The stream runs in a session of its own, so a terminal's Ctrl-C reaches this process only; a
    KeyboardInterrupt here ends the stream and propagates.  Flower colours its log lines whatever they are
    written to: unless ``out`` is a terminal, they are copied without colour codes.
    """
    from edprf_fl import is_terminal, without_colour

    out = out or sys.stdout
    plain = not is_terminal(out)
    proc = subprocess.Popen(
        [flwr_command(), "log", str(run.run_id), *run._conn(), "--stream"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        for line in proc.stdout:
            out.write(without_colour(line) if plain else line)
            out.flush()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _request_tag(app: str, run_config: str | None) -> str:
    """The run's request-tag: ``--run-config``'s, else the app's default ('' when neither gives one: the run's id
    then names its requests)."""
    from client import parse_node_config

    try:
        given = parse_node_config(run_config, option="--run-config") if run_config else {}
    except ValueError:
        given = {}
    tag = given.get("request-tag") or (_app_config(app) or {}).get("request-tag") or ""
    return str(tag)


def run_and_follow(
    app: str,
    connection: str | None,
    run_config: str | None,
    *,
    detach_on_interrupt: bool = False,
    env: dict[str, str] | None = None,
    out=None,
    resubmission_hint: bool = True,
    progress: RunProgress | None = None,
) -> int:
    """Submit, follow, and return the exit status (0 completed, 1 failed or stopped, 130 interrupted).

    ``resubmission_hint``: an interrupted run says how to resubmit it without spending again (False: the caller
    says it in terms of its own options, as ``edprf consortium`` does).  ``progress``: filled with the run's id once
    it is submitted, and its final status."""
    from ._stop_signals import exit_status, stop_signals

    out = out or sys.stdout
    flwr_command()  # a plain install (no Flower) told the extra to install, before anything else (P7)
    check_superlink_certificate(connection, env)  # an expired certificate named, not "unavailable" (U3)
    run = submit(app, connection, run_config, env)
    progress = progress if progress is not None else RunProgress()
    progress.run_id = run.run_id
    conn = f" {run.connection}" if run.connection else ""
    try:
        with stop_signals():  # SIGTERM (timeout, systemd, kill) and SIGHUP (a closed terminal) stop it too
            print(
                f"edprf run: run {run.run_id} submitted; following its log (Ctrl-C "
                f"{'detaches' if detach_on_interrupt else 'stops the run'})",
                file=out,
                flush=True,
            )
            watch = _pending_watch(run, env, detach_on_interrupt)
            try:
                follow(run, out, env)
            finally:
                watch.cancel()
            status, details = run.final_status(env)
    except KeyboardInterrupt as interrupt:
        progress.status = "interrupted"
        if detach_on_interrupt:
            progress.details = f"interrupted; run {run.run_id} continues on the SuperLink (--detach-on-interrupt)"
            _tell(
                f"\nedprf run: interrupted. Run {run.run_id} continues on the SuperLink and keeps asking parties "
                f"to spend epsilon until it ends; stop it with: {quiet_flwr(f'stop {run.run_id}{conn}')}"
            )
            return exit_status(interrupt)
        code, text = run.stop(env)  # first: after SIGHUP there may be no terminal left to tell
        progress.details = (
            f"interrupted; stopped run {run.run_id}"
            if code == 0
            else f"interrupted, but flwr stop {run.run_id}{conn} failed ({code}): the run continues on the SuperLink"
        )
        if code == 0:
            resubmit = (
                " To use those releases without spending again, once each party's `edprf budget` shows the entry "
                "released (while it is reserved the party answers request_spent), submit with "
                f"request-tag='{_request_tag(app, run_config) or run.run_id}', the same run config and a new "
                "output-dir"
                if resubmission_hint
                else ""
            )
            _tell(
                f"\nedprf run: interrupted; stopped run {run.run_id} (flwr stop {run.run_id}{conn}); what parties "
                "already reserved in their ledgers stays spent, and a party that already had the request may still "
                f"spend on it for a few seconds.{resubmit}"
            )
        else:
            _tell(
                f"\nedprf run: interrupted, but flwr stop {run.run_id}{conn} failed ({code}): {text[-500:]}; the run "
                "continues on the SuperLink and keeps asking parties to spend epsilon until it ends: run that "
                "command again"
            )
        return exit_status(interrupt)
    progress.status = status
    if status == "finished:completed":
        print(f"edprf run: run {run.run_id} completed", file=out)
        return 0
    details = details.removeprefix(_FLOWER_FAILURE_PREFIX)  # the failure is the ServerApp's own text
    progress.details = f"run {run.run_id} {status}" + (f": {details}" if details else "")
    print(f"edprf run: run {run.run_id} {status}" + (f": {details}" if details else ""), file=sys.stderr)
    if not status.startswith("finished"):  # the log ended but the run did not (the SuperLink lost, restarted)
        print(
            f"edprf run: the run's end was not seen: it may still be running, and asking parties to spend epsilon, "
            f"once the SuperLink is back. Check it with: {quiet_flwr(f'ls{conn} --run-id {run.run_id}')}; stop it "
            f"with: {quiet_flwr(f'stop {run.run_id}{conn}')}",
            file=sys.stderr,
        )
    return 1


PENDING_WARNING_SECONDS = 30.0
"""After this long still ``pending``, ``edprf run`` says, once, why a run may never start."""


def _pending_watch(run: FlowerRun, env: dict[str, str] | None, detach_on_interrupt: bool = False) -> threading.Timer:
    """A timer that warns once if ``run`` is still pending after :data:`PENDING_WARNING_SECONDS`.

    A run waits, pending, until a SuperExec takes its ServerApp task: with no ``flower-superexec`` running, or
    one that cannot reach the SuperLink (a wrong secret or certificate makes it exit with status 0), it waits
    for ever, and ``flwr log --stream`` shows nothing after "Starting logstream".  The warning names the
    SuperExec, what Ctrl-C does (``detach_on_interrupt``: it stops waiting only) and the command that cancels
    the run.
    """

    def check() -> None:
        status, _ = run.status(env)
        if status == "pending":
            _tell(_pending_text(run, detach_on_interrupt))

    timer = threading.Timer(PENDING_WARNING_SECONDS, check)
    timer.daemon = True
    timer.start()
    return timer


def _pending_text(run: FlowerRun, detach_on_interrupt: bool) -> str:
    """What ``edprf run`` says of a run still pending after :data:`PENDING_WARNING_SECONDS`."""
    stop = quiet_flwr(f"stop {run.run_id}{f' {run.connection}' if run.connection else ''}")
    ctrl_c = (
        f"Ctrl-C stops waiting and leaves the run pending; `{stop}` cancels it"
        if detach_on_interrupt
        else f"Ctrl-C cancels it (`{stop}`)"
    )
    return (
        f"edprf run: run {run.run_id} still pending after {PENDING_WARNING_SECONDS:.0f} s: no SuperExec has started "
        "it. Is flower-superexec (the ServerApp's executor) running, with the SuperLink's secret and certificate? "
        f"(A wrong one makes it exit quietly; the SuperLink's log says why.) {ctrl_c}."
    )


def _tell(text: str) -> None:
    """A line to stderr, if there still is one (a closed terminal after SIGHUP is not an error here)."""
    with contextlib.suppress(OSError):
        print(text, file=sys.stderr, flush=True)


def _output_dir(app: str, run_config: str | None) -> str:
    """The run's output-dir: ``--run-config``'s, else the app's default ('' when neither gives one).  A relative one
    is the ServerApp's, relative to its working directory: read here from this command's (its report is used only
    when it names this run)."""
    from client import parse_node_config

    try:
        given = parse_node_config(run_config, option="--run-config") if run_config else {}
    except ValueError:
        given = {}
    return str(given.get("output-dir") or (_app_config(app) or {}).get("output-dir") or "")


def run_status(code: int, *, submitted: bool) -> str:
    """The ``status`` of ``--json``'s object for a command whose run (``submitted``: one was) exited ``code``."""
    if code >= 128:  # 128 + a signal
        return "stopped"
    if not submitted:
        return "refused"
    return "completed" if code == 0 else "failed"


def run_command(args: argparse.Namespace, argv: Sequence[str] | None = None) -> int:
    """``edprf run``: :func:`run_and_follow`, then ``--fail-on-refusal``'s status and ``--json``'s object."""
    from ._run_summary import json_output, print_summary, refusal_status, run_report, run_summary, warn_refusals
    from ._stop_signals import exit_status

    progress = RunProgress()
    tag = _request_tag(args.app, args.run_config)
    output_dir = _output_dir(args.app, args.run_config)

    def summary(status: str, code: int, error: str | None, report: Path | None = None) -> None:
        if args.json:
            run_id = progress.run_id
            print_summary(
                run_summary(
                    status=status,
                    run_id=run_id,
                    request_tag=tag,
                    output_dir=output_dir,
                    report_path=report,
                    exit_status=code,
                    error=error,
                ),
                stdout,
            )

    with json_output(args.json) as stdout:
        try:
            code = run_and_follow(
                args.app,
                args.connection,
                args.run_config,
                detach_on_interrupt=args.detach_on_interrupt,
                progress=progress,
            )
        except KeyboardInterrupt as interrupt:  # before the run was submitted (after, run_and_follow handles it)
            summary("stopped", exit_status(interrupt), "interrupted before the run was submitted")
            raise
        except (ValueError, OSError) as exc:
            status = run_status(1, submitted=progress.run_id is not None)
            summary(status, getattr(exc, "edprf_exit_status", 1), " ".join(str(exc).split()))
            raise
        report = None if progress.run_id is None else run_report(output_dir, str(progress.run_id))
        warn_refusals(report)
        status = run_status(code, submitted=True)
        final, said = refusal_status(code, report, args.fail_on_refusal)
        if said:
            _tell(f"edprf run: {said}")
        summary(status, final, said or (None if code == 0 else progress.details or None), report)
    return final
