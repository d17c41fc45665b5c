"""`edprf party check --superlink`: the TLS handshake a SuperNode will make, tried before it starts.

Hospital IT walkthrough: `party check --root-certificates <another CA's ca.crt>` said "no problem found", and the
SuperNode then exited with code 305 (CERTIFICATE_VERIFY_FAILED).  A TLS server on 127.0.0.1 with the SuperLink's
certificate stands in for the SuperLink (the handshake is all the check does).
"""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

import pytest

from edprf_fl.cli._main import main

from .test_party_check import _config, party  # noqa: F401 (a fixture)


def _pki(root: Path, name: str, san: str = "IP:127.0.0.1") -> Path:
    out = root / name
    assert main(["certs", "init", "--out", str(out), "--ca-name", f"{name} CA"]) == 0
    assert main(["certs", "server", "--out", str(out), "--san", san]) == 0
    return out


class _Listener:
    """Accepts connections on 127.0.0.1 and, with a certificate, completes a TLS handshake on each."""

    def __init__(self, pki: Path | None) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.context = None
        if pki is not None:
            self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.context.load_cert_chain(pki / "server.pem", pki / "server.key")
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                if self.context is None:
                    conn.recv(1)  # plain TCP: the client's hello is read and never answered as TLS
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                    continue
                try:
                    with self.context.wrap_socket(conn, server_side=True) as tls:
                        tls.recv(1)
                except (ssl.SSLError, OSError):
                    pass

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def pkis(tmp_path, capsys):
    made = _pki(tmp_path, "ours"), _pki(tmp_path, "theirs"), _pki(tmp_path, "other-name", san="DNS:superlink.example")
    capsys.readouterr()
    return made


def _check(paths, capsys, *extra: str) -> tuple[int, str, str]:
    code = main(["party", "check", "--node-config", _config(paths), *extra])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def listener(request, pkis):
    made = _Listener(pkis[request.param - 1] if request.param else None)
    yield made
    made.close()


@pytest.mark.parametrize("listener", [1], indirect=True)
def test_the_consortium_s_ca_verifies_the_superlink(party, pkis, listener, capsys):  # noqa: F811
    paths, _ = party
    ours = pkis[0] / "ca.crt"
    code, out, _ = _check(paths, capsys, "--root-certificates", str(ours), "--superlink", f"127.0.0.1:{listener.port}")
    assert code == 0, out
    assert f"ok: --superlink 127.0.0.1:{listener.port}: TLS handshake verified with ca.crt" in out


@pytest.mark.parametrize("listener", [1], indirect=True)
def test_another_ca_is_a_problem_naming_what_the_supernode_would_do(party, pkis, listener, capsys):  # noqa: F811
    paths, _ = party
    theirs = pkis[1] / "ca.crt"
    code, _, err = _check(
        paths, capsys, "--root-certificates", str(theirs), "--superlink", f"127.0.0.1:{listener.port}"
    )
    assert code == 1
    assert "its certificate does not verify" in err and "code 305" in err and "consortium's ca.crt" in err


@pytest.mark.parametrize("listener", [3], indirect=True)
def test_a_certificate_for_another_name_is_a_problem(party, pkis, listener, capsys):  # noqa: F811
    paths, _ = party
    ca = pkis[2] / "ca.crt"
    code, _, err = _check(paths, capsys, "--root-certificates", str(ca), "--superlink", f"127.0.0.1:{listener.port}")
    assert code == 1 and "does not verify" in err and "127.0.0.1" in err


@pytest.mark.parametrize("listener", [0], indirect=True)
def test_a_port_without_tls_is_a_problem(party, pkis, listener, capsys):  # noqa: F811
    paths, _ = party
    ca = pkis[0] / "ca.crt"
    code, _, err = _check(paths, capsys, "--root-certificates", str(ca), "--superlink", f"127.0.0.1:{listener.port}")
    assert code == 1 and "the TLS handshake failed" in err


def test_nothing_listening_is_a_problem(party, pkis, capsys):  # noqa: F811
    paths, _ = party
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]  # closed again below: nothing listens there
    code, _, err = _check(
        paths, capsys, "--root-certificates", str(pkis[0] / "ca.crt"), "--superlink", f"127.0.0.1:{port}"
    )
    assert code == 1 and "cannot connect" in err and "is the SuperLink (or its gateway) running" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--superlink", "127.0.0.1:9092"], "--superlink: give --root-certificates too"),
        (["--root-certificates", "{ca}", "--superlink", "127.0.0.1"], "expected HOST:PORT"),
        (["--root-certificates", "{ca}", "--superlink", "127.0.0.1:70000"], "expected HOST:PORT"),
        (["--root-certificates", "{ca}", "--superlink", "fe80::1:9092"], "IPv6 address in brackets"),
    ],
)
def test_a_superlink_without_root_certificates_or_a_port_is_refused(party, pkis, capsys, args, message):  # noqa: F811
    paths, _ = party
    code, _, err = _check(paths, capsys, *[a.format(ca=pkis[0] / "ca.crt") for a in args])
    assert code != 0 and message in err


def test_a_bracketed_ipv6_address_is_split():
    from client import split_superlink_address

    assert split_superlink_address("[::1]:9092") == ("::1", 9092)
    assert split_superlink_address("coord.example.org:8443") == ("coord.example.org", 8443)
