"""``edprf party check --superlink``: the TLS handshake a SuperNode will make, tried before it starts.

A SuperNode given root certificates that do not sign the SuperLink's certificate (another consortium's CA, an
expired one, a certificate without the address the party dials) exits with Flower's code 305 and
``CERTIFICATE_VERIFY_FAILED`` in its log; nothing in the party's own files shows it.  This opens one TLS
connection to the address the SuperNode will dial, verifies the certificate chain and the name as gRPC does
(the host of the address: a DNS name or an IP address in the certificate's subject alternative names), and
closes it.  No Flower message is sent; the party's data, ledger and keys are not read.

A certificate outside its validity dates is the coordinator's to renew, not the party's to work around: that
failure names the date and the coordinator's step (deploy/README.md section 7).  A certificate that verifies but
expires within :data:`EXPIRY_NOTE_DAYS` days is a note, and within :data:`EXPIRY_PROBLEM_HOURS` hours a problem: the
time left is said in days, hours or minutes (review rev-day2 U4).

``edprf run`` makes the same handshake (:func:`superlink_handshake`) with its connection's address and root
certificates before it submits, so an expired SuperLink certificate is named instead of Flower's "Connection to the
SuperLink is unavailable" (review rev-day2 U3).
"""

from __future__ import annotations

import datetime as dt
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._preflight import PreflightReport

__all__ = [
    "EXPIRY_NOTE_DAYS",
    "EXPIRY_PROBLEM_HOURS",
    "Handshake",
    "check_superlink_tls",
    "split_superlink_address",
    "superlink_handshake",
    "time_left_text",
]

HANDSHAKE_SECONDS = 5.0
"""How long connecting may take, and then each step of the handshake (so at most about twice this in all)."""

EXPIRY_NOTE_DAYS = 30
"""A SuperLink certificate that verifies but expires within this many days is a note of ``party check`` (and a
warning of ``edprf run``)."""

EXPIRY_PROBLEM_HOURS = 24
"""A SuperLink certificate that verifies but expires within this many hours is a ``problem`` of ``party check``
(exit status 1), not a note.  Once it has expired, a SuperNode that connects (a restart, a network blip) exits with
code 305 and does not retry, and the renewal is the coordinator's (deploy/README.md section 7: a new certificate
and a restart of the SuperLink and SuperExec); a day is the least notice that leaves a working day to ask for it and
do it, so the party's IT team is told to act now rather than read past a note."""

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


@dataclass(frozen=True)
class Handshake:
    """What one TLS handshake with a SuperLink found (:func:`superlink_handshake`).

    Attributes
    ----------
    failure : None when the certificate verified; else what failed: ``roots`` (the root certificates cannot be
        used), ``dates`` (a certificate outside its validity dates), ``verify`` (another CA, or not this host's
        name), ``tls`` (no TLS there), ``timeout`` or ``connect``
    detail : OpenSSL's or the socket's reason for a failure ('' after a verified handshake)
    version : the TLS version of a verified handshake
    not_after : the end date of a verified certificate, UTC
    verify_code : OpenSSL's verify code of a ``dates`` failure (9 not yet valid, 10 expired)
    dates : the ``(notBefore, notAfter)`` of the certificate presented, read without verifying it, after a
        ``dates`` failure (None when a second handshake did not give them)
    """

    failure: str | None
    detail: str = ""
    version: str | None = None
    not_after: dt.datetime | None = None
    verify_code: int = 0
    dates: tuple[dt.datetime, dt.datetime] | None = None

    def dates_text(self) -> str:
        """What a ``dates`` failure means, for a party (the SuperNode's exit and the coordinator's renewal)."""
        return _out_of_dates_text(self)

    def out_of_dates(self, now: dt.datetime) -> tuple[str, dt.datetime | None]:
        """Which dates a ``dates`` failure is about, at ``now``: ``("not yet valid", notBefore)`` (None when that
        date is not after ``now``), ``("expired", notAfter)``, or ``("chain", None)``: the certificate presented is
        in its dates, so another of its chain (the CA's, an intermediate) has expired.  For a party's check and the
        coordinator's alike, each wording it for its reader."""
        not_before, not_after = self.dates if self.dates is not None else (None, None)
        if self.verify_code == _NOT_YET_VALID:
            return "not yet valid", not_before if not_before is not None and not_before > now else None
        if not_after is not None and not_after < now:
            return "expired", not_after
        return "chain", None


def superlink_handshake(address: str, root_certificates: Path, timeout: float = HANDSHAKE_SECONDS) -> Handshake:
    """One TLS connection to ``address`` (``host:port``), verified with ``root_certificates`` as gRPC verifies (the
    chain and the host's name), then closed; nothing is sent.

    Raises
    ------
    ValueError
        ``address`` is not ``host:port`` (:func:`split_superlink_address`).
    """
    host, port = split_superlink_address(address)
    try:
        context = ssl.create_default_context(cafile=str(root_certificates))
    except (ssl.SSLError, OSError) as exc:
        return Handshake("roots", _reason(exc))
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
            return Handshake(
                "dates",
                str(exc.verify_message),
                verify_code=exc.verify_code,
                dates=_presented_dates(host, port, timeout),
            )
        return Handshake("verify", str(exc.verify_message))
    except ssl.SSLError as exc:
        return Handshake("tls", _reason(exc))
    except TimeoutError:
        return Handshake("timeout", f"no answer within {timeout:g} s")
    except OSError as exc:
        return Handshake("connect", _reason(exc))
    return Handshake(None, version=version, not_after=not_after)


def time_left_text(left: dt.timedelta) -> str:
    """``in 3 days``, ``in 4 hours 12 minutes``, ``in 5 minutes``, ``in less than a minute``: the time left, rounded
    down (never more than is left), in days from one day on, else hours and minutes."""
    minutes = max(int(left.total_seconds() // 60), 0)
    days, hours = divmod(minutes // 60, 24)
    minutes %= 60

    def unit(n: int, name: str) -> str:
        return f"{n} {name}{'s' if n != 1 else ''}"

    if days:
        return f"in {unit(days, 'day')}"
    if hours:
        return f"in {unit(hours, 'hour')}" + (f" {unit(minutes, 'minute')}" if minutes else "")
    return f"in {unit(minutes, 'minute')}" if minutes else "in less than a minute"


def check_superlink_tls(
    address: str, root_certificates: Path, report: PreflightReport, timeout: float = HANDSHAKE_SECONDS
) -> None:
    """Add to ``report`` whether a TLS connection to ``address`` verifies with ``root_certificates``.

    One finding: ``ok`` naming the TLS version, or a ``problem`` saying what the SuperNode would meet (nothing
    listening, no TLS there, a certificate the root certificates do not sign or that does not name the host, a
    certificate expired or not yet valid).  After an ``ok``, a ``problem`` when the certificate expires within
    :data:`EXPIRY_PROBLEM_HOURS` hours, else a ``note`` when it expires within :data:`EXPIRY_NOTE_DAYS` days.
    """
    subject = f"--superlink {address}"
    found = superlink_handshake(address, root_certificates, timeout)
    if found.failure == "roots":
        report._add("problem", subject, f"the root certificates cannot be used for a handshake ({found.detail})")
        return
    if found.failure == "dates":
        report._add("problem", subject, found.dates_text())
        return
    if found.failure == "verify":
        report._add(
            "problem",
            subject,
            f"its certificate does not verify with {root_certificates} ({found.detail}): the SuperNode would "
            "exit with code 305 (CERTIFICATE_VERIFY_FAILED); give --root-certificates the consortium's ca.crt, or "
            "ask the coordinator for a certificate naming this address",
        )
        return
    if found.failure == "tls":
        report._add(
            "problem", subject, f"the TLS handshake failed ({found.detail}): is this the TLS port the coordinator gave?"
        )
        return
    if found.failure == "timeout":
        report._add("problem", subject, f"{found.detail}: a firewall, or the wrong address?")
        return
    if found.failure == "connect":
        report._add(
            "problem",
            subject,
            f"cannot connect ({found.detail}): is the SuperLink (or its gateway) running, and is this the address "
            "the coordinator gave?",
        )
        return
    report._add("ok", subject, f"TLS handshake verified with {root_certificates.name} ({found.version}); nothing sent")
    if found.not_after is None:
        return
    left = found.not_after - dt.datetime.now(dt.UTC)
    if left > dt.timedelta(days=EXPIRY_NOTE_DAYS):
        return
    expiry = f"the SuperLink's certificate expires on {_when(found.not_after)}, {time_left_text(left)}"
    if left < dt.timedelta(hours=EXPIRY_PROBLEM_HOURS):
        report._add(
            "problem",
            subject,
            f"{expiry}: ask the coordinator to renew it now (deploy/README.md section 7); once it has expired a "
            "SuperNode that connects (a restart, a network interruption) exits with code 305 and does not retry",
        )
        return
    report._add(
        "note",
        subject,
        f"{expiry}: ask the coordinator to renew it before then (deploy/README.md section 7); once it has expired "
        "every SuperNode exits with code 305 and does not retry",
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


def _out_of_dates_text(found: Handshake) -> str:
    """What to tell a party whose SuperLink presents a certificate outside its validity dates."""
    now = dt.datetime.now(dt.UTC)
    clock = f"this host's clock reads {_when(now)}"
    supernode = "the SuperNode would exit with code 305 (CERTIFICATE_VERIFY_FAILED) and not retry"
    kind, date = found.out_of_dates(now)
    if kind == "not yet valid":
        since = f" before {_when(date)}" if date is not None else ""
        return (
            f"the SuperLink's certificate is not valid{since} ({clock}): {supernode}; if this host's clock is "
            "right, the coordinator reissues the certificate (deploy/README.md section 7)"
        )
    if kind == "expired":
        return (
            f"the SuperLink's certificate expired on {_when(date)} ({clock}): the coordinator renews it "
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
