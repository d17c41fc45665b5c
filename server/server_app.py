"""Flower ServerApp of the coordinator: thin, delegates to :mod:`server._coordinator`.

Run control (:mod:`server._run_control`): an output directory holding another run is refused
before any request is sent (``overwrite = true`` replaces it); a failed run raises once its
report is saved and its summary and failure logged, so that Flower marks it ``finished:failed``
(:mod:`server._failure_log`: Flower's traceback of that exception goes to DEBUG).  The coordinator's own
log lines go to Flower's console handler, in Flower's format (:func:`protocol.flower_console`), and Flower's
log lines are coloured only when its console is a terminal (the ServerApp's output is stored by the
SuperLink and shown by ``flwr log``: never a terminal here).
"""

import logging

from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from protocol import flower_console

from ._config import CoordinatorConfig
from ._coordinator import run_federation
from ._failure_log import failure_lines, quiet_flower_traceback
from ._outcomes import RunStatus
from ._run_control import RunFailed, claim_output_dir, release_output_dir
from ._run_files import check_run_files
from ._summary import summary_lines

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    quiet_flower_traceback()  # a RunFailed below is said by our lines, not by Flower's traceback of it
    with flower_console():  # the coordinator's records (edprf.coordinator) in the run's log, as Flower's are
        _run(grid, context)


def _run(grid: Grid, context: Context) -> None:
    log = logging.getLogger("flwr")  # Flower streams its own logger's records to `flwr run --stream`
    try:
        cfg = CoordinatorConfig.from_run_config(context.run_config)
        files = check_run_files(cfg)  # a file the run cannot use fails it now, not after the parties spent for it
        out = claim_output_dir(cfg, str(context.run_id))
    except (ValueError, OSError) as exc:  # OSError: a file or lock the run cannot use (e.g. no flock on that mount)
        log.error("edprf run %s: failed before any request was sent: %s", context.run_id, exc)
        raise RunFailed(str(exc)) from None
    try:
        report = run_federation(grid, cfg, str(context.run_id), files)
    finally:
        release_output_dir(out)
    for line in summary_lines(report):
        log.info(line)
    if report.status != RunStatus.COMPLETED:
        for line in failure_lines(str(context.run_id), report):
            log.error(line)
        raise RunFailed(report.failure or f"the run ended with status {report.status}")
