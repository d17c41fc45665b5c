"""A hostile party's own `flwr-clientapp`: the coordinator's app runs, but train replies are forged.

A party owns its SuperNode host.  Flower 1.41 ships one app bundle (FAB) to every SuperNode and
each SuperNode starts the ClientApp by running the program called ``flwr-clientapp`` found on its
PATH.  A hostile party therefore needs no change to the federation's code: it puts its own
``flwr-clientapp`` first on the SuperNode's PATH (see :func:`write_launcher`).  That launcher
patches ``ClientApp.__call__`` and then runs Flower's real ``flwr-clientapp``, so the message
arrives and the reply leaves through the real SuperNode, TLS and SuperNode authentication; only
the bytes of the train reply are the attacker's.

The attack is chosen by the node config key ``attack``:

- ``epsilon``: a genuine forest trained at 10x the requested ε, signed with the party's key;
- ``trees``: a genuine forest with 3 trees more than requested, signed;
- ``schema``: a forest trained on another schema (one feature bound changed), signed;
- ``garbage``: random bytes in place of a release;
- ``counts:<attack>`` (issue 20): the party's real ClientApp trains and releases as asked (ledger,
  policy, request binding), then the counts of that release are forged by ``<attack>`` of
  ``tests/forged_releases.py`` and the release is re-signed with the party's key: it conforms.

A hostile party spends no ledger budget and ignores its policy: it is not bound by its own rules.
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path

ATTACKS = ("epsilon", "trees", "schema", "garbage")
COUNTS_PREFIX = "counts:"


def _forged_counts(attack: str, message, reply, context):
    """This party's honest reply to ``message`` with the counts of its release forged and re-signed."""
    import importlib.util

    from flwr.app import ConfigRecord, Message, RecordDict

    from client import PartySetup
    from edprf_core import load_schema
    from protocol import load_private_key
    from protocol.messages import RESULT_KEY

    if reply.has_error() or reply.content[RESULT_KEY]["status"] != "released":
        return reply
    spec = importlib.util.spec_from_file_location(
        "forged_releases", Path(__file__).resolve().parents[1] / "forged_releases.py"
    )
    forged_releases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(forged_releases)
    setup = PartySetup.from_configs(context.node_config, context.run_config)
    key = load_private_key(setup.signing_key_path) if setup.signing_key_path else None
    payload = forged_releases.forge_release_bytes(
        bytes(reply.content[RESULT_KEY]["release"]),
        load_schema(setup.schema_path),
        attack.removeprefix(COUNTS_PREFIX),
        signing_key=key,
    )
    return Message(RecordDict({RESULT_KEY: ConfigRecord({"status": "released", "release": payload})}), reply_to=message)


def _forged_release(attack: str, msg, context) -> bytes:
    from client import PartySetup, load_policy
    from edprf_core import EDPRFClassifier, Schema, load_schema
    from edprf_core.datasets import read_csv
    from protocol import encode_release, load_private_key
    from protocol.messages import REQUEST_KEY, TrainRequest

    if attack == "garbage":
        return os.urandom(4096)
    req = TrainRequest.from_record(dict(msg.content.config_records[REQUEST_KEY]))
    setup = PartySetup.from_configs(context.node_config, context.run_config)
    schema = load_schema(setup.schema_path)
    X, y = read_csv(setup.data_path, schema)
    epsilon, n_trees = req.epsilon, req.n_trees
    if attack == "epsilon":
        epsilon = 10.0 * req.epsilon
    elif attack == "trees":
        n_trees = req.n_trees + 3
    elif attack == "schema":
        schema = Schema.from_toml(schema.to_toml().replace("upper = 5.0", "upper = 6.0", 1))
    else:
        raise ValueError(f"unknown attack {attack!r}; expected one of {ATTACKS}")
    clf = EDPRFClassifier(
        schema,
        epsilon=epsilon,
        n_trees=n_trees,
        max_depth=req.max_depth,
        split_mode=req.split_mode,
        n_bins=req.n_bins,
        relation=req.relation,
    ).fit(X, y)
    key = load_private_key(setup.signing_key_path) if setup.signing_key_path else None
    return encode_release(clf.forest_, load_policy(setup.policy_path).party_id, signing_key=key)


def install() -> None:
    """Patch ``ClientApp.__call__`` in this process: train messages get a forged reply."""
    from flwr.app import ConfigRecord, Message, MessageType, RecordDict
    from flwr.clientapp import ClientApp

    from protocol.messages import RESULT_KEY

    original = ClientApp.__call__

    def __call__(self, message, context):
        attack = str(context.node_config.get("attack", ""))
        # the party's own code refuses unknown node-config keys: it sees the node config without `attack`
        context = copy.copy(context)
        context.node_config = {k: v for k, v in context.node_config.items() if k != "attack"}
        if attack.startswith(COUNTS_PREFIX) and message.metadata.message_type == MessageType.TRAIN:
            return _forged_counts(attack, message, original(self, message, context), context)
        if attack and message.metadata.message_type == MessageType.TRAIN:
            payload = _forged_release(attack, message, context)
            return Message(
                RecordDict({RESULT_KEY: ConfigRecord({"status": "released", "release": payload})}), reply_to=message
            )
        return original(self, message, context)

    ClientApp.__call__ = __call__


def write_launcher(bin_dir: Path) -> Path:
    """Write ``bin_dir/flwr-clientapp``; put ``bin_dir`` first on the hostile SuperNode's PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    launcher = bin_dir / "flwr-clientapp"
    launcher.write_text(
        f"#!{sys.executable}\n"
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('hostile_clientapp', {str(Path(__file__).resolve())!r})\n"
        "hostile = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(hostile)\n"
        "hostile.install()\n"
        "from flwr.supernode.cli import flwr_clientapp\n"
        "sys.exit(flwr_clientapp())\n",
        encoding="utf-8",
    )
    launcher.chmod(0o755)
    return launcher
