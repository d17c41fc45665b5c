"""``edprf party check --superlink``: the TLS handshake a SuperNode will make, tried before it starts.

A SuperNode given root certificates that do not sign the SuperLink's certificate (another consortium's CA, an
expired one, a certificate without the address the party dials) exits with Flower's code 305 and
``CERTIFICATE_VERIFY_FAILED`` in its log; nothing in the party's own files shows it.  This opens one TLS
connection to the address the SuperNode will dial, verifies the certificate chain and the name as gRPC does
(the host of the address: a DNS name or an IP address in the certificate's subject alternative names), and
closes it.  No Flower message is sent; the party's data, ledger and keys are not read.

A certificate outside its validity dates is the coordinator's to renew, not the party's to work around: that
failure names the date and the coordinator's step (deploy/README.md section 7), and a certificate that verifies
but expires within :data:`EXPIRY_NOTE_DAYS` days is a note.
"""

from __future__ import annotations

import datetime as dt
import math
import socket
import ssl
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._preflight import PreflightReport

__all__ = ["EXPIRY_NOTE_DAYS", "check_superlink_tls", "split_superlink_address"]

HANDSHAKE_SECONDS = 5.0
"""How long connecting may take, and then each step of the handshake (so at most about twice this in all)."""

EXPIRY_NOTE_DAYS = 30
"""A SuperLink certificate that verifies but expires within this many days is a note of ``party check``."""

_NOT_YET_VALID, _EXPIRED = 9, 10
"""OpenSSL's ``X509_V_ERR_CERT_NOT_YET_VALID`` and ``X509_V_ERR_CERT_HAS_EXPIRED`` (``verify_code``)."""


def split_superlink_address(address: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port`` as Flower's ``--superlink`` takes it, into host and port.

    Raises
    ------
    ValueError
        No port, or a port outside 1-65535, with what was expected and what came.
    """
    host, sep, port = address.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if bracketed:
        host = host[1:-1]
    elif ":" in host:  # fe80::1:9092 would read as host fe80::1, port 9092 or as host fe80::1:9092, no port
        raise ValueError(f"--superlink: expected an IPv6 address in brackets, [v6]:PORT, got {address!r}")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"--superlink: expected HOST:PORT (the SuperNode's --superlink), got {address!r}")
    return host, int(port)


def check_superlink_tls(
    address: str, root_certificates: Path, report: PreflightReport, timeout: float = HANDSHAKE_SECONDS
) -> None:
    """Add to ``report`` whether a TLS connection to ``address`` verifies with ``root_certificates``.

    One finding: ``ok`` naming the TLS version, or a ``problem`` saying what the SuperNode would meet (nothing
    listening, no TLS there, a certificate the root certificates do not sign or that does not name the host, a
    certificate expired or not yet valid).  After an ``ok``, a ``note`` when the certificate expires within
    :data:`EXPIRY_NOTE_DAYS` days.
    """
    host, port = split_superlink_address(address)
    subject = f"--superlink {address}"
    try:
        context = ssl.create_default_context(cafile=str(root_certificates))
    except (ssl.SSLError, OSError) as exc:
        report._add("problem", subject, f"the root certificates cannot be used for a handshake ({_reason(exc)})")
        return
    context.set_alpn_protocols(["h2"])  # as gRPC offers
    # Python 3.13 and later verify strictly (RFC 5280) by default; gRPC does not: judge as the SuperNode will
    context.verify_flags &= ~getattr(ssl, "VERIFY_X509_STRICT", 0)
    try:
        with (
            socket.create_connection((host, port), timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=host) as tls,
        ):
            version = tls.version()
            not_after = _not_after(tls.getpeercert())
    except ssl.SSLCertVerificationError as exc:
        if exc.verify_code in (_NOT_YET_VALID, _EXPIRED):
            report._add("problem", subject, _out_of_dates_text(exc.verify_code, _presented_dates(host, port, timeout)))
            return
        report._add(
            "problem",
            subject,
            f"its certificate does not verify with {root_certificates} ({exc.verify_message}): the SuperNode would "
            "exit with code 305 (CERTIFICATE_VERIFY_FAILED); give --root-certificates the consortium's ca.crt, or "
            "ask the coordinator for a certificate naming this address",
        )
        return
    except ssl.SSLError as exc:
        report._add(
            "problem", subject, f"the TLS handshake failed ({_reason(exc)}): is this the TLS port the coordinator gave?"
        )
        return
    except TimeoutError:
        report._add("problem", subject, f"no answer within {timeout:g} s: a firewall, or the wrong address?")
        return
    except OSError as exc:
        report._add(
            "problem",
            subject,
            f"cannot connect ({_reason(exc)}): is the SuperLink (or its gateway) running, and is this the address "
            "the coordinator gave?",
        )
        return
    report._add("ok", subject, f"TLS handshake verified with {root_certificates.name} ({version}); nothing sent")
    now = dt.datetime.now(dt.UTC)
    if not_after is not None and not_after - now <= dt.timedelta(days=EXPIRY_NOTE_DAYS):
        days = max(math.ceil((not_after - now) / dt.timedelta(days=1)), 0)
        report._add(
            "note",
            subject,
            f"the SuperLink's certificate expires on {_when(not_after)}, in {days} day{'s' if days != 1 else ''}: "
            "ask the coordinator to renew it before then (deploy/README.md section 7); once it has expired every "
            "SuperNode exits with code 305 and does not retry",
        )


def _not_after(peer: dict | None) -> dt.datetime | None:
    """The ``notAfter`` of a verified peer certificate (``SSLSocket.getpeercert()``), in UTC."""
    text = (peer or {}).get("notAfter")
    if not text:
        return None
    return dt.datetime.fromtimestamp(ssl.cert_time_to_seconds(text), dt.UTC)


def _presented_dates(host: str, port: int, timeout: float) -> tuple[dt.datetime, dt.datetime] | None:
    """The validity dates of the certificate the server presents, read without verifying it; None when a
    second handshake does not give one.  Only to word the failure of the verified handshake."""
    from cryptography import x509

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with (
            socket.create_connection((host, port), timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=host) as tls,
        ):
            der = tls.getpeercert(binary_form=True)
        certificate = x509.load_der_x509_certificate(der)
    except (OSError, ValueError, TypeError):  # ssl.SSLError is an OSError
        return None
    return certificate.not_valid_before_utc, certificate.not_valid_after_utc


def _out_of_dates_text(verify_code: int, dates: tuple[dt.datetime, dt.datetime] | None) -> str:
    """What to tell a party whose SuperLink presents a certificate outside its validity dates."""
    now = dt.datetime.now(dt.UTC)
    clock = f"this host's clock reads {_when(now)}"
    supernode = "the SuperNode would exit with code 305 (CERTIFICATE_VERIFY_FAILED) and not retry"
    not_before, not_after = dates if dates is not None else (None, None)
    if verify_code == _NOT_YET_VALID:
        since = f" before {_when(not_before)}" if not_before is not None and not_before > now else ""
        return (
            f"the SuperLink's certificate is not valid{since} ({clock}): {supernode}; if this host's clock is "
            "right, the coordinator reissues the certificate (deploy/README.md section 7)"
        )
    if not_after is not None and not_after < now:
        return (
            f"the SuperLink's certificate expired on {_when(not_after)} ({clock}): the coordinator renews it "
            f"(deploy/README.md section 7); until then {supernode}. Nothing to change on this party's side"
        )
    # the presented certificate is in its dates: another certificate of the chain has expired, possibly the CA in
    # this party's own --root-certificates (a copy the coordinator has since replaced)
    return (
        f"a certificate of the SuperLink's chain has expired ({clock}), the CA certificate or an intermediate: "
        f"{supernode}. Check the end date of the file this party gives as --root-certificates (`openssl x509 "
        "-noout -enddate -in <that file>`); if it has passed, take the consortium's current CA certificate from the "
        "coordinator, else the coordinator renews its chain (deploy/README.md section 7)"
    )


def _when(moment: dt.datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())[:200]
