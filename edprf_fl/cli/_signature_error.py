"""A model whose releases do not verify with ``--keys``: every ``edprf`` command that reads a model exits 3 for it."""

from __future__ import annotations

from edprf_core import EDPRFError

__all__ = ["SignatureNotVerified"]


class SignatureNotVerified(EDPRFError, ValueError):
    """A global model refused by its signatures with ``--keys``: a release unsigned, signed by a party without a key in
    the directory, or with a signature that does not verify.

    ``edprf`` exits 3 for it, as ``inspect``, ``predict`` and ``evaluate`` do (``_model_args.EXIT_SIGNATURE``; review
    rev-auto A5: ``explain`` and ``export`` exited 1 with the same message).  The entry point reads
    :attr:`edprf_exit_status` rather than importing this class (it imports no ``edprf_core``).
    """

    edprf_exit_status = 3
