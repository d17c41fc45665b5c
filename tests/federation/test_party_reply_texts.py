"""Every text a party can send the coordinator fits in what the coordinator keeps of it (``MAX_PARTY_TEXT``).

The coordinator cuts a party's text at ``MAX_PARTY_TEXT`` characters (server._party_text): the ``request_spent``
refusal was 212 characters with an ordinary request id, and the cut took its key words, "stays spent"
(deployment walkthrough).  The texts are enumerated from the party's source: every ``Refusal(reason, message)``
the ``client`` package raises, sized at its widest (each formatted value at the widest value it can take, in
:data:`WIDEST`; a message that is not a literal or an f-string is produced by the function that makes it, at
its widest, in :func:`_produced_widths`), and the handlers' constant texts.  A new message with a value this
test does not know fails it until its widest value is added here.
"""

from __future__ import annotations

import ast
import sys
from fractions import Fraction

import pytest

from client._flower_handlers import _CONSTANT_TEXT
from client._ledger import _exhausted, format_epsilon
from client._party import (
    _INVALID_LOCAL_DATA_TEXT,
    _LEDGER_DISK_TEXT,
    _OTHER_RECIPIENT_TEXT,
    _REQUEST_SPENT_TEXT,
    _SAMPLERS_TEXT,
)
from edprf_core.forest import RELATIONS, SPLIT_MODES
from protocol import check_request_id, generate_signing_key
from protocol._registration import MAX_REGISTERED_PARTIES, registration_problem, registration_text
from server._party_text import MAX_PARTY_TEXT
from tests.import_graph import REPO

_FLOATS = (sys.float_info.max, sys.float_info.min, 5e-324, 1.2345678901234567e-300, 0.1 + 0.2, 123456.78901234567)
"""Floats of the widest forms: an epsilon or a share as ``repr`` or ``:g`` prints it."""
_LONGEST_TAG = "t" * 64
"""A coordinator's request-tag is 1..64 characters (server._config); the run id replaces it when not given."""
_REQUEST_ID = max(len(f"{_LONGEST_TAG}/train"), len(f"{_LONGEST_TAG}/{2**64 - 1}/evaluate"))
"""The longest request id the coordinator sends: a train request, or an evaluation's (a node id is a uint64)."""
_FINGERPRINT = len("sha256:" + "0" * 64)
"""A schema's fingerprint (edprf_core.Schema.fingerprint), the coordinator's as the party's."""
_COUNT = 12
"""Counts and sizes below 10^12: a model's bytes are below Flower's 2 GiB message (10 digits), and its releases,
trees, nodes, work and memory below the party's limits, set far below that."""
_EPSILON_AMOUNT = len(format_epsilon(Fraction(999_999_999_999, 10**6)))
"""An amount of epsilon as the ledger keeps it (a multiple of 1e-6), below 10^6."""

WIDEST = {
    "what": len("evaluation"),  # _check_epsilon's "release" or "evaluation"
    "epsilon!r": max(len(repr(x)) for x in _FLOATS),
    "req.epsilon!r": max(len(repr(x)) for x in _FLOATS),
    "self.policy.min_epsilon!r": max(len(repr(x)) for x in _FLOATS),
    "p.max_evaluation_epsilon!r": max(len(repr(x)) for x in _FLOATS),
    "req.epsilon:g": max(len(f"{x:g}") for x in _FLOATS),
    "p.max_release_epsilon:g": max(len(f"{x:g}") for x in _FLOATS),
    "req.marginals_share:g": max(len(f"{x:g}") for x in _FLOATS),
    "req.schema_fingerprint": _FINGERPRINT,
    "self.schema.fingerprint": _FINGERPRINT,
    "req.request_id": _REQUEST_ID,
    "req.relation!r": max(len(repr(r)) for r in RELATIONS),
    "p.relation!r": max(len(repr(r)) for r in RELATIONS),
    "req.split_mode": max(len(m) for m in SPLIT_MODES),
    "whose": max(len("the party's maximum"), len("the most one fit builds")),
    "format_epsilon(entry.epsilon_exact)": _EPSILON_AMOUNT,
    **dict.fromkeys(
        (
            "req.max_depth",
            "p.max_depth",
            "req.n_trees",
            "p.max_n_trees",
            "req.n_bins",
            "p.max_n_bins",
            "req.marginals_bins",
            "nodes",
            "most",
            "len(model)",
            "p.max_evaluation_model_bytes",
            "header.schema_toml_bytes",
            "schema_cap",
            "header.n_bytes",
            "header.n_releases",
            "header.n_trees",
            "header.n_nodes",
            "p.max_evaluation_trees",
            "p.max_evaluation_nodes",
            "p.max_evaluation_parts",
            "cost.work_units",
            "p.max_evaluation_work",
            "cost.memory_bytes >> 20",
            "p.max_evaluation_memory_bytes >> 20",
        ),
        _COUNT,
    ),
}
"""The widest text of each value a refusal formats, by its source (``!r`` and ``:spec`` as written)."""


class _Long(str):
    """A text as long as the largest message Flower accepts claims (only its length is read)."""

    def __len__(self) -> int:
        return 2**31 - 1


def _produced_widths() -> dict[str, int]:
    """The widest text of each message (or formatted exception) that is not written out in the ``Refusal`` call, by
    its source."""
    widest_amount = Fraction(999_999_999_999, 10**6)
    budget = max(
        len(_exhausted(kind, widest_amount, widest_amount, widest_amount)) for kind in ("release", "evaluation")
    )
    party_id, key = "p" * 64, generate_signing_key("ed25519")  # a party id is at most 64 characters
    many = ",".join(f"{i:032x}:{i:032x}" for i in range(MAX_REGISTERED_PARTIES))  # a count of the most digits
    problems = [
        registration_problem(many, party_id, key),  # not registered at all
        registration_problem(registration_text({party_id: key.public_key()}), party_id, None),  # no signing key
        registration_problem(registration_text({party_id: generate_signing_key().public_key()}), party_id, key),
    ]
    assert None not in problems
    try:
        check_request_id(_Long("\x00"), "request-id", required=True)
    except ValueError as exc:
        bad_id = str(exc)
    return {
        "str(exc)": budget,  # client.BudgetExhausted, from the ledger
        "problem": max(len(p) for p in problems),  # protocol.registration_problem
        "exc": max(len(bad_id), len(bad_id.replace("request-id", "run-id"))),  # check_request_id, in bad_request
        "_INVALID_LOCAL_DATA_TEXT": len(_INVALID_LOCAL_DATA_TEXT),  # constants of client._party
        "_REQUEST_SPENT_TEXT": len(_REQUEST_SPENT_TEXT),
        "_SAMPLERS_TEXT": len(_SAMPLERS_TEXT),
        "_LEDGER_DISK_TEXT": len(_LEDGER_DISK_TEXT),
        "_OTHER_RECIPIENT_TEXT": len(_OTHER_RECIPIENT_TEXT),
    }


def _key(value: ast.FormattedValue) -> str:
    conversion = f"!{chr(value.conversion)}" if value.conversion > 0 else ""
    spec = "".join(str(part.value) for part in value.format_spec.values) if value.format_spec else ""
    return ast.unparse(value.value) + conversion + (f":{spec}" if spec else "")


def _refusals() -> list[tuple[str, str, ast.expr]]:
    """(where, reason, message) of every ``Refusal(reason, message)`` in the client package."""
    found = []
    for path in sorted((REPO / "client").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Refusal":
                where = f"{path.relative_to(REPO)}:{node.lineno}"
                found.append((where, ast.unparse(node.args[0]), node.args[1]))
    return found


def _widest(message: ast.expr, produced: dict[str, int]) -> int:
    if isinstance(message, ast.Constant) and isinstance(message.value, str):
        return len(message.value)
    if isinstance(message, ast.JoinedStr):
        total = 0
        for part in message.values:
            if isinstance(part, ast.Constant):
                total += len(part.value)
            elif _key(part) in WIDEST or _key(part) in produced:
                total += WIDEST.get(_key(part)) or produced[_key(part)]
            else:
                pytest.fail(f"add the widest value of {{{_key(part)}}} to WIDEST")
        return total
    source = ast.unparse(message)
    if source not in produced:
        pytest.fail(f"add the widest text of {source} to _produced_widths")
    return produced[source]


def test_every_refusal_a_party_can_send_fits_what_the_coordinator_keeps():
    produced = _produced_widths()
    refusals = _refusals()
    assert len(refusals) >= 30, "the scan found the party's refusals"
    widths = {f"{where} ({reason})": _widest(message, produced) for where, reason, message in refusals}
    widths |= {
        f"client._flower_handlers constant text ({reason})": len(text) for reason, text in _CONSTANT_TEXT.items()
    }
    too_long = {where: width for where, width in widths.items() if width > MAX_PARTY_TEXT}
    assert too_long == {}, f"texts the coordinator cuts at {MAX_PARTY_TEXT} characters, at their widest: {too_long}"


def test_the_scan_sizes_an_f_string_by_its_widest_values():
    """The sizing itself, on a message of the party's form."""
    message = ast.parse('f"{req.n_trees} trees, {p.relation!r}; {req.epsilon:g}"').body[0].value
    assert _widest(message, {}) == _COUNT + len(" trees, ") + WIDEST["p.relation!r"] + 2 + WIDEST["req.epsilon:g"]
    assert WIDEST["req.epsilon:g"] == len("1.23457e-300") and WIDEST["req.relation!r"] == len("'replace-one'")
    assert _REQUEST_ID == 64 + len("/18446744073709551615/evaluate")
    with pytest.raises(pytest.fail.Exception, match="add the widest value of {req.seed}"):
        _widest(ast.parse('f"{req.seed}"').body[0].value, {})
