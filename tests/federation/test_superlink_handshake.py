"""`edprf party check --superlink`: the TLS handshake a SuperNode will make, tried before it starts.

Hospital IT walkthrough: `party check --root-certificates <another CA's ca.crt>` said "no problem found", and the
SuperNode then exited with code 305 (CERTIFICATE_VERIFY_FAILED).  A TLS server on 127.0.0.1 with the SuperLink's
certificate stands in for the SuperLink (the handshake is all the check does).
"""

from __future__ import annotations

import datetime as dt
import socket
import ssl
import threading
from pathlib import Path

import pytest
from cryptography import x509

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


# ----------------------------------------------------------------------------- validity dates
# Review (day-2 operations, finding 7): a SuperLink certificate past its notAfter gave the party "give
# --root-certificates the consortium's ca.crt", the wrong fix; the coordinator renews it.


def _server_certificate(pki: Path, monkeypatch, shift: dt.timedelta, days: int) -> None:
    """Reissue pki's server certificate as if `edprf certs server --days DAYS` ran `shift` from now."""
    from edprf_fl.cli import _certs

    real_now = _certs._now
    with monkeypatch.context() as patch:
        patch.setattr(_certs, "_now", lambda: real_now() + shift)
        assert (
            main(["certs", "server", "--out", str(pki), "--san", "IP:127.0.0.1", "--days", str(days), "--force"]) == 0
        )


def _dated_check(party_paths, pki: Path, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    served = _Listener(pki)
    try:
        return _check(
            party_paths, capsys, "--root-certificates", str(pki / "ca.crt"), "--superlink", f"127.0.0.1:{served.port}"
        )
    finally:
        served.close()


def test_an_expired_superlink_certificate_is_the_coordinator_s_to_renew(party, pkis, capsys, monkeypatch):  # noqa: F811
    paths, _ = party
    _server_certificate(pkis[0], monkeypatch, -dt.timedelta(days=400), days=1)
    expired = x509.load_pem_x509_certificate((pkis[0] / "server.pem").read_bytes()).not_valid_after_utc
    code, _, err = _dated_check(paths, pkis[0], capsys)
    assert code == 1
    assert f"the SuperLink's certificate expired on {expired:%Y-%m-%d %H:%M} UTC" in err
    assert "the coordinator renews it (deploy/README.md section 7)" in err and "code 305" in err
    assert "give --root-certificates" not in err  # not the party's fix


def test_a_superlink_certificate_not_yet_valid_names_its_date_and_the_clock(party, pkis, capsys, monkeypatch):  # noqa: F811
    paths, _ = party
    _server_certificate(pkis[0], monkeypatch, dt.timedelta(days=3), days=30)
    starts = x509.load_pem_x509_certificate((pkis[0] / "server.pem").read_bytes()).not_valid_before_utc
    code, _, err = _dated_check(paths, pkis[0], capsys)
    assert code == 1
    assert f"the SuperLink's certificate is not valid before {starts:%Y-%m-%d %H:%M} UTC" in err
    assert "this host's clock" in err and "give --root-certificates" not in err


def test_a_superlink_certificate_expiring_within_30_days_is_a_note(party, pkis, capsys, monkeypatch):  # noqa: F811
    paths, _ = party
    _server_certificate(pkis[0], monkeypatch, dt.timedelta(0), days=10)
    ends = x509.load_pem_x509_certificate((pkis[0] / "server.pem").read_bytes()).not_valid_after_utc
    code, out, err = _dated_check(paths, pkis[0], capsys)
    assert code == 0, err
    text = out + err
    assert "note: --superlink 127.0.0.1:" in text
    assert f"the SuperLink's certificate expires on {ends:%Y-%m-%d %H:%M} UTC" in text
    assert "ask the coordinator to renew it" in text


def test_a_superlink_certificate_expiring_within_a_day_is_a_problem_in_hours(party, pkis, capsys, monkeypatch):  # noqa: F811
    """Review rev-day2 U4: a certificate ending in hours said "in 1 day", was a note, and the check exited 0."""
    paths, _ = party
    _server_certificate(pkis[0], monkeypatch, -dt.timedelta(hours=20), days=1)  # ends in about 4 hours
    ends = x509.load_pem_x509_certificate((pkis[0] / "server.pem").read_bytes()).not_valid_after_utc
    code, out, err = _dated_check(paths, pkis[0], capsys)
    assert code == 1, out + err
    assert f"the SuperLink's certificate expires on {ends:%Y-%m-%d %H:%M} UTC, in 3 hours" in err
    assert "renew it now (deploy/README.md section 7)" in err and "in 1 day" not in out + err


def test_the_time_left_is_said_in_days_hours_or_minutes():
    from client import time_left_text

    hours, minutes, days = dt.timedelta(hours=1), dt.timedelta(minutes=1), dt.timedelta(days=1)
    assert time_left_text(5 * minutes + dt.timedelta(seconds=59)) == "in 5 minutes"
    assert time_left_text(dt.timedelta(seconds=30)) == "in less than a minute"
    assert time_left_text(-minutes) == "in less than a minute"
    assert time_left_text(minutes) == "in 1 minute"
    assert time_left_text(4 * hours + 12 * minutes) == "in 4 hours 12 minutes"
    assert time_left_text(hours) == "in 1 hour"
    assert time_left_text(days + 23 * hours) == "in 1 day"  # rounded down: never more than is left
    assert time_left_text(10 * days) == "in 10 days"


@pytest.mark.parametrize("listener", [1], indirect=True)
def test_a_superlink_certificate_of_a_year_has_no_expiry_note(party, pkis, listener, capsys):  # noqa: F811
    paths, _ = party
    code, out, err = _check(
        paths, capsys, "--root-certificates", str(pkis[0] / "ca.crt"), "--superlink", f"127.0.0.1:{listener.port}"
    )
    assert code == 0 and "expires on" not in out + err


# ----------------------------------------------------------------------------- edprf run (review rev-day2 U3)
# An expired SuperLink certificate gave the coordinator only Flower's "Connection to the SuperLink is unavailable".


def _flwr_home(tmp_path: Path, port: int, roots: Path, insecure: bool = False) -> dict[str, str]:
    home = tmp_path / "flwr-home"
    home.mkdir(exist_ok=True)
    security = "insecure = true\n" if insecure else f'root-certificates = "{roots}"\n'
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "consortium"\n\n[superlink.consortium]\naddress = "127.0.0.1:{port}"\n{security}',
        encoding="utf-8",
    )
    return {"FLWR_HOME": str(home)}


def _run_before_submitting(tmp_path, pki: Path, capsys, monkeypatch, insecure: bool = False) -> tuple[int, str]:
    """`edprf run` against a TLS listener with pki's certificate; `flwr run` itself is never called."""
    from edprf_fl.cli import _run_cmd

    class Submitted(Exception):
        pass

    def no_submit(*_args, **_kwargs):
        raise Submitted

    served = _Listener(pki)
    try:
        env = _flwr_home(tmp_path, served.port, pki / "ca.crt", insecure)
        monkeypatch.setenv("FLWR_HOME", env["FLWR_HOME"])
        monkeypatch.setattr(_run_cmd, "submit", no_submit)
        capsys.readouterr()
        try:
            code = main(["run", str(tmp_path)])
        except Submitted:
            code = -1  # the check let it through to the submission
    finally:
        served.close()
    return code, capsys.readouterr().err


def test_edprf_run_names_an_expired_superlink_certificate_before_submitting(tmp_path, pkis, capsys, monkeypatch):
    _server_certificate(pkis[0], monkeypatch, -dt.timedelta(days=400), days=1)
    expired = x509.load_pem_x509_certificate((pkis[0] / "server.pem").read_bytes()).not_valid_after_utc
    code, err = _run_before_submitting(tmp_path, pkis[0], capsys, monkeypatch)
    assert code == 1, err
    assert "the SuperLink's certificate at 127.0.0.1:" in err and f"expired on {expired:%Y-%m-%d %H:%M} UTC" in err
    assert "No run was submitted" in err and "openssl x509 -noout -enddate -in $COORD/pki/server.pem" in err
    assert "Connection to the SuperLink is unavailable" in err  # the symptom it explains


def test_edprf_run_warns_of_a_superlink_certificate_expiring_within_30_days(tmp_path, pkis, capsys, monkeypatch):
    _server_certificate(pkis[0], monkeypatch, dt.timedelta(0), days=10)
    code, err = _run_before_submitting(tmp_path, pkis[0], capsys, monkeypatch)
    assert code == -1, err  # submitted all the same
    assert "edprf run: warning: the SuperLink's certificate at 127.0.0.1:" in err and "in 9 days" in err
    assert "deploy/README.md section 7" in err


def test_edprf_run_says_nothing_of_a_valid_certificate_or_an_insecure_connection(tmp_path, pkis, capsys, monkeypatch):
    assert _run_before_submitting(tmp_path, pkis[0], capsys, monkeypatch) == (-1, "")
    _server_certificate(pkis[0], monkeypatch, -dt.timedelta(days=400), days=1)  # expired, but not checked:
    assert _run_before_submitting(tmp_path, pkis[0], capsys, monkeypatch, insecure=True) == (-1, "")


def test_edprf_run_leaves_a_silent_superlink_to_flower_after_its_short_wait(tmp_path, pkis, capsys, monkeypatch):
    """Review rev-s65 F6: a SuperLink that accepts the connection and never answers the handshake held `edprf run`
    for the party check's 5 s twice; the run's check waits RUN_CHECK_SECONDS, says nothing and submits."""
    import client
    from edprf_fl.cli import _run_cmd

    waits = []
    real = client.superlink_handshake

    def spied(address, roots, timeout=5.0):
        waits.append(timeout)
        return real(address, roots, timeout)

    monkeypatch.setattr(client, "superlink_handshake", spied)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # the kernel completes the connection; nobody ever speaks TLS on it
    try:
        monkeypatch.setenv("FLWR_HOME", _flwr_home(tmp_path, silent.getsockname()[1], pkis[0] / "ca.crt")["FLWR_HOME"])

        class Submitted(Exception):
            pass

        def no_submit(*_args, **_kwargs):
            raise Submitted

        monkeypatch.setattr(_run_cmd, "submit", no_submit)
        capsys.readouterr()
        with pytest.raises(Submitted):
            main(["run", str(tmp_path)])
    finally:
        silent.close()
    assert waits == [_run_cmd.RUN_CHECK_SECONDS] and _run_cmd.RUN_CHECK_SECONDS <= 2.0
    assert capsys.readouterr().err == ""
