"""Flower ServerApp of the coordinator: thin, delegates to :mod:`server._coordinator`."""

import logging

from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from ._config import CoordinatorConfig
from ._coordinator import run_federation
from ._summary import summary_lines

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    report = run_federation(grid, CoordinatorConfig.from_run_config(context.run_config), str(context.run_id))
    log = logging.getLogger("flwr")  # Flower streams its own logger's records to `flwr run --stream`
    for line in summary_lines(report):
        log.info(line)
