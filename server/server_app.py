"""Flower ServerApp of the coordinator: thin, delegates to :mod:`server._coordinator`."""

from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from ._config import CoordinatorConfig
from ._coordinator import run_federation

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    run_federation(grid, CoordinatorConfig.from_run_config(context.run_config), str(context.run_id))
