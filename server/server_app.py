"""Flower ServerApp of the coordinator: thin, delegates to :mod:`server._coordinator`.

Run control (:mod:`server._run_control`): an output directory holding another run is refused
before any request is sent (``overwrite = true`` replaces it); a failed run raises once its
report is saved and its summary logged, so that Flower marks it ``finished:failed``.
"""

import logging

from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from ._config import CoordinatorConfig
from ._coordinator import run_federation
from ._outcomes import RunStatus
from ._run_control import RunFailed, claim_output_dir, release_output_dir
from ._summary import summary_lines

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    log = logging.getLogger("flwr")  # Flower streams its own logger's records to `flwr run --stream`
    try:
        cfg = CoordinatorConfig.from_run_config(context.run_config)
        out = claim_output_dir(cfg, str(context.run_id))
    except ValueError as exc:
        log.error("edprf run %s: failed before any request was sent: %s", context.run_id, exc)
        raise RunFailed(str(exc)) from None
    try:
        report = run_federation(grid, cfg, str(context.run_id))
    finally:
        release_output_dir(out)
    for line in summary_lines(report):
        log.info(line)
    if report.status != RunStatus.COMPLETED:
        raise RunFailed(report.failure or f"the run ended with status {report.status}")
