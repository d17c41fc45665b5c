"""``edprf party check --superlink``: the TLS handshake a SuperNode will make, tried before it starts.

A SuperNode given root certificates that do not sign the SuperLink's certificate (another consortium's CA, an
expired one, a certificate without the address the party dials) exits with Flower's code 305 and
``CERTIFICATE_VERIFY_FAILED`` in its log; nothing in the party's own files shows it.  This opens one TLS
connection to the address the SuperNode will dial, verifies the certificate chain and the name as gRPC does
(the host of the address: a DNS name or an IP address in the certificate's subject alternative names), and
closes it.  No Flower message is sent; the party's data, ledger and keys are not read.
"""

from __future__ import annotations

import socket
import ssl
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._preflight import PreflightReport

__all__ = ["check_superlink_tls", "split_superlink_address"]

HANDSHAKE_SECONDS = 5.0
"""How long connecting may take, and then each step of the handshake (so at most about twice this in all)."""


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
    listening, no TLS there, a certificate the root certificates do not sign or that does not name the host).
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
    except ssl.SSLCertVerificationError as exc:
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


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())[:200]
