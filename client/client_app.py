"""Flower ClientApp of a party: thin, delegates to :mod:`client._party`.

No module globals hold state: every message builds its party from the node's
files (policy, schema, ledger, data), which persist on the party's disk.

Flower 1.41 starts a ClientApp process for each message and calls the app's
lifespan hook around the handler: the hook runs the party's own checks
(:mod:`client._preflight`, those of ``edprf party check`` except reading the
data rows: only the data file's header, so that no reply's latency depends on
the rows) and writes them to the SuperNode's output, so a misconfigured party
is visible there at the first message, and a party running without its app pin says so there once per process
(:mod:`client._app_pin`).  The checks never change a reply.  The party's own log lines
(``edprf.party``: the checks, each refusal, each release) go to Flower's console handler, in Flower's
format (:func:`protocol.flower_console`); Flower's log lines are coloured only when the SuperNode's console
is a terminal (Flower 1.41 colours them always; a SuperNode's output is mostly a log file).
"""

from collections.abc import Iterator

from flwr.app import Context, Message
from flwr.clientapp import ClientApp

from protocol import flower_console

from ._app_pin import warn_if_unpinned
from ._flower_handlers import handle_evaluate, handle_query, handle_train
from ._preflight import log_preflight

app = ClientApp()


@app.lifespan()
def lifespan(context: Context) -> Iterator[None]:
    # the party's records reach the SuperNode's console as Flower's do (the ClientApp runs as its child)
    with flower_console():
        warn_if_unpinned(context.node_config)
        log_preflight(context.node_config, context.run_config)
        yield


@app.train()
def train(msg: Message, context: Context) -> Message:
    return handle_train(msg, context)


@app.evaluate()
def evaluate(msg: Message, context: Context) -> Message:
    return handle_evaluate(msg, context)


@app.query()
def query(msg: Message, context: Context) -> Message:
    return handle_query(msg, context)
