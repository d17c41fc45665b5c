"""Invariant 1 for the texts a party sends: every refusal text is built from public values only.

A refusal reaches the coordinator as its reason code and its text (``client.Refusal``), after any reservation and
outside any DP mechanism: a text that holds anything computed from the party's rows, its files or its machine (an
exception's type or text from the read or the fit, a count of rows, a path, free bytes) would leak it unaccounted.
So every ``Refusal(reason, message)`` in the ``client`` package is enumerated from the source, and each value its
message formats is checked against the values that function may use, each with why it is public: the request's
own fields, the party's policy (its configuration, no data), the public schema's fingerprint, the global model the
coordinator sent, the ledger's epsilon amounts (the sum of requests' public epsilons), and module constants.  A
new value in a reply (mutation campaign 4, M16: the exception's type in ``internal_error``; M18: the disk
problem's text with its path and free bytes in ``party_setup``) fails this test until it is shown public and
added here.  The handlers' texts for exceptions (``client._flower_handlers._CONSTANT_TEXT``) are constants.
"""

from __future__ import annotations

import ast
import re
import sys

import pytest

from client import _party
from client._flower_handlers import _CONSTANT_TEXT
from tests.import_graph import REPO

pytestmark = pytest.mark.privacy

_POLICY_LIMITS = {
    "p.max_depth",
    "p.max_n_bins",
    "p.max_n_trees",
    "p.max_release_epsilon",
    "p.relation",
    "whose",  # which of two constant phrases names the limit
    "most",  # the policy's node limit, or the most one fit builds: from the request's public parameters
    "nodes",  # the nodes a release of the request's trees, depth and grid may hold: public parameters
}
_REQUEST = {
    "req.epsilon",
    "req.marginals_bins",
    "req.marginals_share",
    "req.max_depth",
    "req.n_bins",
    "req.n_trees",
    "req.relation",
    "req.schema_fingerprint",
    "req.split_mode",
    "req.request_id",
}
_GLOBAL_MODEL = {  # the model the coordinator sent, and the policy's caps on it
    "cost.memory_bytes >> 20",
    "cost.work_units",
    "header.n_bytes",
    "header.n_nodes",
    "header.n_releases",
    "header.n_trees",
    "header.schema_toml_bytes",
    "len(model)",
    "p.max_evaluation_memory_bytes >> 20",
    "p.max_evaluation_model_bytes",
    "p.max_evaluation_nodes",
    "p.max_evaluation_parts",
    "p.max_evaluation_trees",
    "p.max_evaluation_work",
    "schema_cap",
    "self.schema.fingerprint",
}

PUBLIC_VALUES: dict[str, set[str]] = {
    # a repeated request id: the epsilon the ledger recorded for it (the earlier request's own, public), the
    # registration problem (the run's registered public keys against the party's id and key), a constant
    "_admit_train": {"_REQUEST_SPENT_TEXT", "format_epsilon(entry.epsilon_exact)", "problem"},
    "_check_epsilon": {"epsilon", "self.policy.min_epsilon", "what"},  # the request's epsilon, the policy's floor
    "_check_model": _GLOBAL_MODEL,
    "_check_reply_ids": {"exc"},  # protocol.check_request_id on the request's own ids
    "_check_train": _POLICY_LIMITS | _REQUEST | {"self.schema.fingerprint"},
    "_data": {"_INVALID_LOCAL_DATA_TEXT"},
    "_refuse_a_ledger_that_cannot_be_kept": {"_LEDGER_DISK_TEXT"},
    "_record_delivery": {"_LEDGER_DISK_TEXT"},  # a resend whose delivery cannot be recorded (review rev-dpo D3)
    "_refuse_a_release_of_another_split": set(),
    "_refuse_another_recipient": {"_OTHER_RECIPIENT_TEXT"},  # a constant (review rev-dpo D3)
    "_refuse_after_the_round": set(),
    "_refuse_an_unusable_data_file": {"_INVALID_LOCAL_DATA_TEXT"},
    # client.BudgetExhausted: the ledger's amounts (sums of the requests' public epsilons) and the policy's cap
    "_refuse_unaffordable": {"str(exc)"},
    "_refuse_without_the_samplers": {"_SAMPLERS_TEXT"},
    "_reserve": {"_REQUEST_SPENT_TEXT", "str(exc)"},
    "_signing_key": set(),
    "evaluate": {"p.max_evaluation_epsilon", "req.epsilon", "req.request_id"},
    "train": {"_INVALID_LOCAL_DATA_TEXT"},
}
"""The values each function's refusal texts may format (as the source writes them), each public as said."""


def _formatted_values() -> dict[str, set[str]]:
    """The values the ``Refusal`` messages of each function of the client package format or are."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / "client").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Refusal"):
                    continue
                message = node.args[1] if len(node.args) > 1 else next(k.value for k in node.keywords)
                if isinstance(message, ast.JoinedStr):
                    values = {ast.unparse(v.value) for v in message.values if isinstance(v, ast.FormattedValue)}
                elif isinstance(message, ast.Constant) and isinstance(message.value, str):
                    values = set()
                else:
                    values = {ast.unparse(message)}
                found.setdefault(function.name, set()).update(values)
    return found


def test_every_refusal_text_formats_public_values_only():
    found = _formatted_values()
    assert len(found) >= 15, "the scan found the party's refusals"
    unknown = {f: sorted(v - PUBLIC_VALUES.get(f, set())) for f, v in found.items() if v - PUBLIC_VALUES.get(f, set())}
    assert unknown == {}, (
        "refusal texts format values this test does not know to be public (a refusal is sent outside any DP "
        f"mechanism): {unknown}; show each is public (request, policy, schema, global model) and add it"
    )


def test_the_named_texts_are_module_constants():
    """A message given by name is a string constant of ``client._party``, not a text built at run time."""
    constants = {v for values in PUBLIC_VALUES.values() for v in values if re.fullmatch(r"_[A-Z_]+", v)}
    assert constants == {
        "_REQUEST_SPENT_TEXT",
        "_INVALID_LOCAL_DATA_TEXT",
        "_LEDGER_DISK_TEXT",
        "_SAMPLERS_TEXT",
        "_OTHER_RECIPIENT_TEXT",
    }
    source = ast.parse((REPO / "client" / "_party.py").read_text(encoding="utf-8"))
    assigned = {
        target.id: node.value
        for node in source.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    for name in constants:
        value = assigned.get(name)
        assert isinstance(value, ast.Constant) and isinstance(value.value, str), (
            f"{name}: expected a string literal at module level, got {ast.unparse(value) if value else None}"
        )
        assert getattr(_party, name) == value.value


def test_the_handlers_answer_exceptions_with_constant_texts():
    assert _CONSTANT_TEXT and all(isinstance(text, str) and text for text in _CONSTANT_TEXT.values())
    source = ast.parse((REPO / "client" / "_flower_handlers.py").read_text(encoding="utf-8"))
    table = next(
        node.value
        for node in source.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        and any(
            isinstance(t, ast.Name) and t.id == "_CONSTANT_TEXT"
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
    )
    assert isinstance(table, ast.Dict) and all(
        isinstance(v, ast.Constant) and isinstance(v.value, str) for v in table.values
    ), "the handlers' texts are string literals in the source"


def test_the_scan_sees_a_formatted_value_in_a_reply(tmp_path, monkeypatch):
    """The check itself: a message formatting the exception's type (mutation M16) is found and unknown."""
    module = tmp_path / "client"
    module.mkdir()
    (module / "_party.py").write_text(
        "def train(self, req):\n"
        "    try:\n        pass\n"
        "    except Exception as exc:\n"
        "        raise Refusal(R.INTERNAL_ERROR, f'training failed ({type(exc).__name__})')\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    found = _formatted_values()
    assert found == {"train": {"type(exc).__name__"}}
    assert found["train"] - PUBLIC_VALUES["train"] == {"type(exc).__name__"}
