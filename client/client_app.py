"""Flower ClientApp of a party: thin, delegates to :mod:`client._party`.

No module globals hold state: every message builds its party from the node's
files (policy, schema, ledger, data), which persist on the party's disk.
"""

from flwr.app import Context, Message
from flwr.clientapp import ClientApp

from ._flower_handlers import handle_evaluate, handle_train

app = ClientApp()


@app.train()
def train(msg: Message, context: Context) -> Message:
    return handle_train(msg, context)


@app.evaluate()
def evaluate(msg: Message, context: Context) -> Message:
    return handle_evaluate(msg, context)
