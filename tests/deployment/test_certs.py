"""`edprf certs`: the CA, the SuperLink certificate and the parties' keys (no network, fast).

The files are checked with the loaders that will read them: Flower's own SuperNode-key checks,
protocol's key loaders and registry, and X.509 chain verification.  The deployment tests use the
same files over real TLS.
"""

from __future__ import annotations

import ipaddress
import stat

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import ExtendedKeyUsageOID

from edprf_fl.cli._certs import party_files
from edprf_fl.cli._main import main
from protocol import PartyKeyRegistry, key_id, load_private_key


def _certs(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["certs", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def pki(tmp_path, capsys):
    out = tmp_path / "pki"
    assert _certs(capsys, "init", "--out", out, "--ca-name", "Example consortium CA")[0] == 0
    return out


def _verify_signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> None:
    issuer.public_key().verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))


def test_init_makes_a_p384_ca_with_a_private_key_file(pki):
    key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), password=None)
    cert = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    assert isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, ec.SECP384R1)
    assert cert.public_key().public_numbers() == key.public_key().public_numbers()
    assert cert.subject == cert.issuer and "Example consortium CA" in cert.subject.rfc4514_string()
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert cert.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign is True
    _verify_signed_by(cert, cert)
    assert _mode(pki / "ca.key") == 0o600 and _mode(pki / "ca.crt") == 0o644


def test_server_certificate_names_exactly_the_sans_and_chains_to_the_ca(pki, capsys):
    code, out, _ = _certs(
        capsys,
        "server",
        "--out",
        pki,
        "--san",
        "DNS:coord.example.org",
        "--san",
        "IP:127.0.0.1",
        "--san",
        "DNS:superlink",
    )
    assert code == 0
    ca = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    cert = x509.load_pem_x509_certificate((pki / "server.pem").read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["coord.example.org", "superlink"]
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert cert.issuer == ca.subject
    _verify_signed_by(cert, ca)
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert ExtendedKeyUsageOID.SERVER_AUTH in cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert cert.not_valid_after_utc <= ca.not_valid_after_utc
    key = serialization.load_pem_private_key((pki / "server.key").read_bytes(), password=None)
    assert cert.public_key().public_numbers() == key.public_key().public_numbers()
    assert _mode(pki / "server.key") == 0o600
    assert "wrote:" in out and "next:" in out and "flower-superlink --ssl-ca-certfile" in out


@pytest.mark.filterwarnings("ignore:'click.utils.get_:DeprecationWarning")  # typer, imported by flwr's CLI
def test_party_keys_are_what_flower_and_the_coordinator_accept(tmp_path, capsys):
    from flwr.cli.supernode.register import try_load_public_key  # what `flwr supernode register` runs

    keys = tmp_path / "keys"
    code, out, _ = _certs(capsys, "party", "--out", keys, "--party-id", "hospital-a")
    assert code == 0
    files = party_files(keys, "hospital-a")
    for path in files.all():
        assert path.is_file(), path
    assert _mode(files.auth_key) == 0o600 and _mode(files.signing_key) == 0o600
    assert _mode(files.auth_pub) == 0o644 and _mode(files.signing_pub) == 0o644

    # SuperNode authentication: an OpenSSH EC key on a NIST curve (flower-supernode loads it this way)
    auth = serialization.load_ssh_private_key(files.auth_key.read_bytes(), password=None)
    assert isinstance(auth, ec.EllipticCurvePrivateKey) and isinstance(auth.curve, ec.SECP384R1)
    assert files.auth_pub.read_text().startswith("ecdsa-sha2-nistp384 ")
    pub = serialization.load_ssh_public_key(files.auth_pub.read_bytes())
    assert pub.public_numbers() == auth.public_key().public_numbers()
    assert try_load_public_key(files.auth_pub) == auth.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )

    # release signing: Ed25519 by default; the coordinator's keys-dir reads <party_id>.pub.pem
    signing = load_private_key(files.signing_key)
    assert isinstance(signing, ed25519.Ed25519PrivateKey)
    registry = PartyKeyRegistry.from_directory(keys)  # the .auth.key.pub file is not mistaken for one
    assert list(registry) == ["hospital-a"] and registry.key_id("hospital-a") == key_id(signing)
    assert key_id(signing) in out
    assert f"flwr supernode register {files.auth_pub}" in out and "--auth-supernode-private-key" in out
    # the hint is copied into a shell that may lack the runbook's exports: Flower kept from phoning out (rev-pkg2 R6)
    assert f"FLWR_TELEMETRY_ENABLED=0 FLWR_DISABLE_UPDATE_CHECK=1 flwr supernode register {files.auth_pub}" in out


def test_party_p384_signing_key(tmp_path, capsys):
    assert _certs(capsys, "party", "--out", tmp_path, "--party-id", "bank-1", "--signing-key-type", "p384")[0] == 0
    key = load_private_key(party_files(tmp_path, "bank-1").signing_key)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, ec.SECP384R1)


def test_existing_keys_are_never_replaced_without_force(pki, tmp_path, capsys):
    keys = tmp_path / "keys"
    assert _certs(capsys, "party", "--out", keys, "--party-id", "hospital-a")[0] == 0
    files = party_files(keys, "hospital-a")
    before = {p: p.read_bytes() for p in files.all()}
    ca_before = (pki / "ca.key").read_bytes()

    for args in (["party", "--out", keys, "--party-id", "hospital-a"], ["init", "--out", pki, "--ca-name", "another"]):
        code, out, err = _certs(capsys, *args)
        assert code == 1 and "refusing to overwrite" in err and "--force" in err, err
        assert out == ""
    assert {p: p.read_bytes() for p in files.all()} == before
    assert (pki / "ca.key").read_bytes() == ca_before
    assert _certs(capsys, "server", "--out", pki, "--san", "IP:127.0.0.1")[0] == 0
    server_key = (pki / "server.key").read_bytes()
    code, _, err = _certs(capsys, "server", "--out", pki, "--san", "IP:127.0.0.1")
    assert code == 1 and "refusing to overwrite" in err
    assert (pki / "server.key").read_bytes() == server_key

    # rotation of one key pair: the other stays as it was
    assert _certs(capsys, "party", "--out", keys, "--party-id", "hospital-a", "--only", "signing", "--force")[0] == 0
    after = {p: p.read_bytes() for p in files.all()}
    assert after[files.auth_key] == before[files.auth_key] and after[files.auth_pub] == before[files.auth_pub]
    assert after[files.signing_key] != before[files.signing_key]
    assert _certs(capsys, "party", "--out", keys, "--party-id", "hospital-a", "--force")[0] == 0
    assert party_files(keys, "hospital-a").auth_key.read_bytes() != before[files.auth_key]


@pytest.mark.parametrize(
    "args, message",
    [
        (["server", "--out", "{tmp}/nowhere", "--san", "IP:127.0.0.1"], "edprf certs init"),
        (["server", "--out", "{pki}", "--san", "URI:https://x"], "expected the type DNS or IP"),
        (["server", "--out", "{pki}", "--san", "IP:not-an-ip"], "is not an IP address"),
        (["server", "--out", "{pki}", "--san", "coord.example.org"], "expected DNS:<name> or IP:<address>"),
        (["server", "--out", "{pki}", "--san", "IP:127.0.0.1", "--san", "IP:127.0.0.1"], "given twice"),
        (["party", "--out", "{tmp}/k", "--party-id", "../escape"], "party id"),
        (["init", "--out", "{tmp}/ca2", "--ca-name", "x", "--days", "0"], "--days"),
    ],
)
def test_bad_arguments_are_refused_with_a_message_and_write_nothing(pki, tmp_path, capsys, args, message):
    before = sorted(p.name for p in tmp_path.rglob("*"))
    code, _, err = _certs(capsys, *[a.format(tmp=tmp_path, pki=pki) for a in args])
    assert code == 1 and message in err, err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_certificate_of_a_foreign_ca_does_not_verify(tmp_path, capsys):
    for name in ("ours", "theirs"):
        assert _certs(capsys, "init", "--out", tmp_path / name, "--ca-name", name)[0] == 0
    assert _certs(capsys, "server", "--out", tmp_path / "ours", "--san", "IP:127.0.0.1")[0] == 0
    cert = x509.load_pem_x509_certificate((tmp_path / "ours" / "server.pem").read_bytes())
    foreign = x509.load_pem_x509_certificate((tmp_path / "theirs" / "ca.crt").read_bytes())
    with pytest.raises(Exception):  # noqa: B017 - InvalidSignature, or a key mismatch error
        _verify_signed_by(cert, foreign)
    assert isinstance(cert.signature_hash_algorithm, hashes.SHA384)


@pytest.mark.parametrize(("only", "unchanged"), [("auth", "signing"), ("signing", "auth")])
def test_a_rotation_s_hint_names_only_files_it_wrote(tmp_path, capsys, only, unchanged):
    """Deployment walkthrough: `edprf certs party --only auth` into a new directory (the runbook's key rotation)
    printed a SuperNode command with signing-key='<new dir>/hospital-a.signing.pem', a file it did not write."""
    keys = tmp_path / "keys-new"
    code, out, _ = _certs(capsys, "party", "--out", keys, "--party-id", "hospital-a", "--only", only)
    assert code == 0
    files = party_files(keys, "hospital-a")
    absent = files.signing_key if unchanged == "signing" else files.auth_key
    assert not absent.exists() and str(absent) not in out
    assert f"<its current {'signing' if unchanged == 'signing' else 'SuperNode'} key, unchanged>" in out
    if only == "auth":  # review rev-day2 U10: section 7's steps, not a SuperNode started on keys-new (moved, removed)
        assert f"--auth-supernode-private-key {files.auth_key}" not in out and "flower-supernode" not in out
        steps = out.split("next:", 1)[1]
        order = ("ssh-keygen -lf", "flwr supernode register", f"mv {files.auth_key} <keys dir>/hospital-a.auth.key")
        assert all(step in steps for step in order), steps
        assert [steps.index(step) for step in order] == sorted(steps.index(step) for step in order)
        assert "flwr supernode unregister <old node id>" in steps and "section 7" in steps


def test_a_server_certificate_renewal_says_to_restart_not_to_make_party_keys(pki, capsys):
    """Review rev-day2 U10: `certs server --force` (section 7's renewal) said "then, per party: edprf certs party"."""
    code, out, err = _certs(capsys, "server", "--out", pki, "--san", "IP:127.0.0.1")
    assert code == 0 and "then, per party: edprf certs party" in out, err  # the first issue: parties come next
    code, out, err = _certs(capsys, "server", "--out", pki, "--san", "IP:127.0.0.1", "--force")
    assert code == 0, err
    steps = out.split("next:", 1)[1]
    assert "edprf certs party" not in steps and "openssl x509 -noout -enddate -in" in steps
    assert "restart the SuperLink, the SuperExec and the gateway (deploy/README.md section 7" in steps


@pytest.mark.parametrize("command", [["init", "--ca-name", "Test CA"], ["party", "--party-id", "hospital-a"]])
def test_the_out_directory_and_the_parents_it_creates_are_owner_only_whatever_the_umask(
    tmp_path, capsys, command, permissive_umask
):
    """``--out a/b/keys`` created ``a`` and ``a/b`` under the umask (0755 under 022), ``keys`` alone 0700."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)  # an existing parent keeps its mode
    out = shared / "a" / "b" / "keys"
    code, _, err = _certs(capsys, command[0], "--out", out, *command[1:])
    assert code == 0, err
    created = {str(p.relative_to(shared)): oct(_mode(p)) for p in (out.parents[1], out.parent, out)}
    assert created == {"a": "0o700", "a/b": "0o700", "a/b/keys": "0o700"}
    assert _mode(shared) == 0o755
