"""Wire format of DP forest releases (``edprf.v1``), strict decoding and provenance.

A party encodes its fitted forest::

    data = encode_release(clf.forest_, "hospital-a", signing_key=key)

and the coordinator decodes untrusted bytes against the federation's schema,
its policy and the parties' public keys::

    release = decode_release(data, schema, ReleasePolicy(max_epsilon=2.0), registry)

Decoding raises :class:`InvalidRelease` (with a :class:`Reason`) for every
defect and nothing else.  Accepted releases go into a global model with
:func:`build_global_model`; :func:`load_global_model` re-verifies them, and
:func:`load_classifier` loads a global model as a fitted scikit-learn
classifier (verifying signatures when given the parties' keys) for predicting.
The coordinator-party message contract (the requests and the record keys of a Flower
message) is the public module :mod:`protocol.messages`.
The releases are defined in ``release.proto``; ``release_pb2`` is generated
(``python -m protocol.regenerate``) and committed.
"""

from ._app_logging import flower_console, is_terminal, logging_to
from ._atomic_file import PendingFile, commit_together, fsync_directory, save_atomic
from ._binding import bind_to_run, bound_to_run
from ._classifier_loader import ModelProvenance, load_classifier, load_model_with_provenance
from ._decode import SignedCharge, VerifiedRelease, decode_release, signed_charge
from ._encode import encode_release
from ._envelope import FORMAT_VERSION, ReleaseHeader, read_release_header
from ._errors import InvalidRelease, Reason
from ._global_model import (
    MAX_TOLERATED_PARTIES,
    ROW_COUNT_SOURCES,
    ROW_COUNTS_KEY,
    SIMULATION_ROW_COUNTS_NOTE,
    GlobalModelView,
    build_global_model,
    load_global_model,
)
from ._ids import check_request_id
from ._keys import (
    KEY_KINDS,
    generate_signing_key,
    key_id,
    load_private_key,
    load_public_key,
    save_private_key,
    save_public_key,
)
from ._model_header import ModelHeader, peek_global_model
from ._owner_only import (
    OWNER_ONLY_DIR,
    OWNER_ONLY_FILE,
    create_owner_only_file,
    make_owner_only_dirs,
    open_owner_only,
    others_can_write,
)
from ._parameters import check_party_id
from ._policy import INSPECTION_POLICY, ReleasePolicy
from ._registration import registration_problem, registration_text
from ._registry import PartyKeyRegistry
from ._release_bound import FIXED_RELEASE_BYTES, largest_release_bytes, request_release_bytes
from ._reply_codes import REFUSAL_REASONS, RefusalReason, ReplyStatus
from ._signature import SignatureStatus, signed_by
from ._spend_record import recorded_spend, spend_record_text

__all__ = [
    "FIXED_RELEASE_BYTES",
    "FORMAT_VERSION",
    "INSPECTION_POLICY",
    "KEY_KINDS",
    "MAX_TOLERATED_PARTIES",
    "OWNER_ONLY_DIR",
    "OWNER_ONLY_FILE",
    "REFUSAL_REASONS",
    "ROW_COUNTS_KEY",
    "ROW_COUNT_SOURCES",
    "SIMULATION_ROW_COUNTS_NOTE",
    "GlobalModelView",
    "InvalidRelease",
    "ModelHeader",
    "ModelProvenance",
    "PartyKeyRegistry",
    "PendingFile",
    "Reason",
    "RefusalReason",
    "ReleaseHeader",
    "ReleasePolicy",
    "ReplyStatus",
    "SignatureStatus",
    "SignedCharge",
    "VerifiedRelease",
    "bind_to_run",
    "bound_to_run",
    "build_global_model",
    "check_party_id",
    "check_request_id",
    "commit_together",
    "create_owner_only_file",
    "decode_release",
    "encode_release",
    "flower_console",
    "fsync_directory",
    "generate_signing_key",
    "is_terminal",
    "key_id",
    "largest_release_bytes",
    "load_classifier",
    "load_global_model",
    "load_model_with_provenance",
    "load_private_key",
    "load_public_key",
    "logging_to",
    "make_owner_only_dirs",
    "open_owner_only",
    "others_can_write",
    "peek_global_model",
    "read_release_header",
    "recorded_spend",
    "registration_problem",
    "registration_text",
    "request_release_bytes",
    "save_atomic",
    "save_private_key",
    "save_public_key",
    "signed_by",
    "signed_charge",
    "spend_record_text",
]
