"""``edprf certs``: the files a TLS deployment with SuperNode authentication needs.

Three steps, each writing into ``--out DIR``::

    edprf certs init   --out pki --ca-name "Example consortium CA"        # ca.key, ca.crt
    edprf certs server --out pki --san DNS:coord.example.org --san IP:127.0.0.1   # server.key, server.pem
    edprf certs party  --out keys --party-id hospital-a                    # 4 key files, see below

- The consortium CA is an EC P-384 key and a self-signed certificate.  Parties
  receive ``ca.crt`` only (``flower-supernode --root-certificates ca.crt``); keep
  ``ca.key`` offline.
- The SuperLink's certificate is signed by the CA and names exactly the SANs
  given (SuperNodes check the address they dial against them).
- A party gets two key pairs, for two different jobs:
  ``<id>.auth.key`` / ``<id>.auth.key.pub``: EC P-384 in OpenSSH format, the
  SuperNode's identity towards the SuperLink (``flwr supernode register``;
  Flower accepts NIST-curve EC keys only, not Ed25519);
  ``<id>.signing.pem`` / ``<id>.pub.pem``: the release-signing key (Ed25519 by
  default, or P-384) whose public half goes into the coordinator's ``keys-dir``.

Private keys are written with mode 0600; ``--out`` and the parents it lacks are
created with mode 0700, whatever the umask.  Existing keys are never replaced
unless ``--force`` is given.
"""

from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from edprf_fl import quiet_flwr

__all__ = ["CA_CERT", "CA_KEY", "SERVER_CERT", "SERVER_KEY", "PartyFiles", "party_files", "register"]

CA_KEY, CA_CERT = "ca.key", "ca.crt"
SERVER_KEY, SERVER_CERT = "server.key", "server.pem"


@dataclass(frozen=True)
class PartyFiles:
    """Where ``edprf certs party`` writes a party's keys (all in one directory)."""

    auth_key: Path  # OpenSSH private key, SuperNode authentication
    auth_pub: Path  # OpenSSH public key, for `flwr supernode register`
    signing_key: Path  # PKCS#8 PEM, node config `signing-key`
    signing_pub: Path  # SubjectPublicKeyInfo PEM, the coordinator's keys-dir

    def all(self) -> tuple[Path, ...]:
        return (self.auth_key, self.auth_pub, self.signing_key, self.signing_pub)


def party_files(out: str | Path, party_id: str) -> PartyFiles:
    """The four file names of ``party_id`` under ``out``."""
    out = Path(out)
    return PartyFiles(
        out / f"{party_id}.auth.key",
        out / f"{party_id}.auth.key.pub",
        out / f"{party_id}.signing.pem",
        out / f"{party_id}.pub.pem",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``certs`` subcommand and its ``init``, ``server`` and ``party`` actions."""
    from ._exit_text import exit_epilog

    parser = subparsers.add_parser(
        "certs",
        help="make the CA, the SuperLink certificate and parties' keys for a TLS deployment",
        description="Make the files of a deployment with TLS and SuperNode authentication: the consortium CA, "
        "the SuperLink's certificate, and each party's authentication and release-signing keys.",
        epilog="See deploy/README.md for the whole runbook.  "
        + exit_epilog("0 written; 1 an error (an output exists without --force, a file cannot be read or written)"),
    )
    actions = parser.add_subparsers(dest="certs_action", metavar="ACTION", required=True)

    p = actions.add_parser(
        "init",
        help="create the consortium CA (EC P-384 key and self-signed certificate)",
        description="Create the consortium CA: an EC P-384 key and its self-signed certificate, which signs the "
        "SuperLink's certificate.",
    )
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help=f"writes DIR/{CA_KEY} and DIR/{CA_CERT}")
    p.add_argument("--ca-name", required=True, metavar="NAME", help="the CA's common name")
    p.add_argument("--days", type=int, default=3650, help="validity in days (default 3650)")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing CA (every certificate it signed "
        "stops being trusted by parties that take the new ca.crt)",
    )
    p.set_defaults(handler=run_init)

    p = actions.add_parser(
        "server",
        help="issue the SuperLink's TLS certificate, signed by the CA",
        description="Issue the SuperLink's TLS key and certificate, signed by the consortium CA, for the names "
        "and addresses it is reached by.",
    )
    p.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help=f"writes DIR/{SERVER_KEY} and DIR/{SERVER_CERT}"
    )
    p.add_argument(
        "--san",
        action="append",
        required=True,
        metavar="DNS:name|IP:address",
        help="a subject alternative name the SuperLink is reached by (repeat for several)",
    )
    p.add_argument(
        "--ca",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"directory holding {CA_KEY} and {CA_CERT} (default: --out)",
    )
    p.add_argument("--days", type=int, default=365, help="validity in days (default 365)")
    p.add_argument("--force", action="store_true", help="replace an existing server key and certificate")
    p.set_defaults(handler=run_server)

    p = actions.add_parser(
        "party",
        help="create a party's SuperNode authentication key and release-signing key",
        description="Create a party's SuperNode authentication key pair and its release-signing key pair (or, "
        "with --only, one of them).",
    )
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="directory for the party's key files")
    p.add_argument("--party-id", required=True, help="the party's id (as in its policy file and its releases)")
    p.add_argument(
        "--signing-key-type",
        choices=("ed25519", "p384"),
        default="ed25519",
        help="algorithm of the release-signing key (default ed25519)",
    )
    p.add_argument(
        "--only",
        choices=("auth", "signing"),
        default=None,
        help="create (or with --force, rotate) only one of the two key pairs",
    )
    p.add_argument("--force", action="store_true", help="replace existing keys (key rotation)")
    p.set_defaults(handler=run_party)


# ----------------------------------------------------------------------------- helpers
def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def _check_days(days: int) -> None:
    if not 1 <= days <= 36500:
        raise ValueError(f"--days: expected 1 to 36500, got {days}")


def _refuse_overwrite(paths: Sequence[Path], force: bool, what: str) -> None:
    existing = [str(p) for p in paths if p.exists() or p.is_symlink()]
    if existing and not force:
        raise FileExistsError(
            f"refusing to overwrite {what}: {', '.join(existing)} already exist(s). Pass --force to "
            "replace them (anything that uses the old files stops working until it gets the new "
            "ones), or choose another --out directory"
        )


def _make_dir(path: Path) -> None:
    """Create ``--out`` and each missing parent with mode 0700, whatever the umask; existing ones keep theirs.

    The parents were created under the umask (0755 under 022): ``--out local/pki`` left ``local/``, where the
    runbook then writes the SuperExec secret, readable by every account (security review finding 6).
    """
    from protocol import make_owner_only_dirs

    make_owner_only_dirs(path)


def _write(path: Path, data: bytes, private: bool) -> Path:
    from protocol import save_atomic

    return save_atomic(path, data, mode=0o600 if private else 0o644)


def _pem_key(key) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _parse_san(text: str):
    from cryptography import x509

    kind, sep, value = text.partition(":")
    kind = kind.strip().upper()
    value = value.strip()
    if not sep or not value:
        raise ValueError(f"--san: expected DNS:<name> or IP:<address>, got {text!r}")
    if kind == "DNS":
        if any(c.isspace() for c in value) or "/" in value:
            raise ValueError(f"--san: {value!r} is not a DNS name")
        return x509.DNSName(value)
    if kind == "IP":
        try:
            return x509.IPAddress(ipaddress.ip_address(value))
        except ValueError:
            raise ValueError(f"--san: {value!r} is not an IP address") from None
    raise ValueError(f"--san: expected the type DNS or IP, got {kind!r} in {text!r}")


def _report(written: Sequence[Path], next_steps: Sequence[str]) -> None:
    print("wrote:")
    for path in written:
        mode = os.stat(path).st_mode & 0o777
        print(f"  {path}  (mode {mode:04o})")
    print("next:")
    for step in next_steps:
        print(f"  {step}")


def _q(path: Path | str) -> str:
    return shlex.quote(str(path))


# ----------------------------------------------------------------------------- actions
def _issue(
    out: Path,
    key_path: Path,
    cert_path: Path,
    common_name: str,
    days: int,
    *,
    ca: bool,
    sans: Sequence = (),
    issuer_key=None,
    issuer_cert=None,
) -> None:
    """A new EC P-384 key and its certificate (self-signed CA, or a server certificate signed by
    ``issuer_key``/``issuer_cert``), written to ``key_path`` (0600) and ``cert_path``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP384R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    now = _now()
    not_after = now + dt.timedelta(days=days)
    if ca:
        issuer, issuer_key, issuer_ski = subject, key, ski
    else:
        issuer, issuer_ski = (
            issuer_cert.subject,
            issuer_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value,
        )
        not_after = min(not_after, issuer_cert.not_valid_after_utc)
    usage = {
        "content_commitment": False,
        "key_encipherment": False,
        "data_encipherment": False,
        "encipher_only": False,
        "decipher_only": False,
    }
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=ca, crl_sign=ca, key_agreement=not ca, **usage),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(issuer_ski), critical=False)
    )
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False).add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
    cert = builder.sign(issuer_key, hashes.SHA384())
    _make_dir(out)
    _write(key_path, _pem_key(key), private=True)
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM), private=False)


def run_init(args: argparse.Namespace) -> int:
    """``edprf certs init``: an EC P-384 CA key and a self-signed CA certificate."""
    _check_days(args.days)
    if not args.ca_name.strip():
        raise ValueError("--ca-name: expected a non-empty name")
    out: Path = args.out
    key_path, cert_path = out / CA_KEY, out / CA_CERT
    _refuse_overwrite([key_path, cert_path], args.force, "the CA")
    _issue(out, key_path, cert_path, args.ca_name.strip(), args.days, ca=True)
    _report(
        [key_path, cert_path],
        [
            f"keep {key_path} offline; give {cert_path} to every party and to the operators' flwr CLI",
            f"edprf certs server --out {_q(out)} --san DNS:<the SuperLink's host name> --san IP:<its address>",
        ],
    )
    return 0


def run_server(args: argparse.Namespace) -> int:
    """``edprf certs server``: the SuperLink's key and certificate, signed by the CA, with the given SANs."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    _check_days(args.days)
    sans = [_parse_san(s) for s in args.san]
    if len({repr(s) for s in sans}) != len(sans):
        raise ValueError(f"--san: the same name is given twice in {args.san}")
    out: Path = args.out
    ca_dir: Path = args.ca if args.ca is not None else out
    ca_key_path, ca_cert_path = ca_dir / CA_KEY, ca_dir / CA_CERT
    for p in (ca_key_path, ca_cert_path):
        if not p.is_file():
            raise FileNotFoundError(
                f"no CA file {p}: run `edprf certs init --out {ca_dir} --ca-name NAME` first, "
                "or name the CA's directory with --ca DIR"
            )
    ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
    ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
    if ca_cert.public_key().public_numbers() != ca_key.public_key().public_numbers():
        raise ValueError(f"{ca_key_path} is not the key of {ca_cert_path}")
    key_path, cert_path = out / SERVER_KEY, out / SERVER_CERT
    _refuse_overwrite([key_path, cert_path], args.force, "the SuperLink's key and certificate")
    renewing = key_path.exists() or cert_path.exists()  # --force over a certificate in use: section 7's renewal
    _issue(
        out,
        key_path,
        cert_path,
        str(sans[0].value),
        args.days,
        ca=False,
        sans=sans,
        issuer_key=ca_key,
        issuer_cert=ca_cert,
    )
    superlink = (
        f"flower-superlink --ssl-ca-certfile {_q(ca_cert_path)} --ssl-certfile {_q(cert_path)} "
        f"--ssl-keyfile {_q(key_path)} --enable-supernode-auth --isolation process "
        "--superexec-auth-secret-file <secret file> --host 127.0.0.1 --port 9093 "
        "--database <state dir>/superlink.db --disable-runtime-dependency-installation   "
        "(deploy/README.md section 2; or deploy/compose.yaml)"
    )
    if renewing:  # review rev-day2 U10: the parties have their keys; the SuperLink's processes read the new files
        _report(
            [key_path, cert_path],
            [
                f"openssl x509 -noout -enddate -in {_q(cert_path)}   (the new end date: note it, and renew before it)",
                (
                    "with no run going, restart the SuperLink, the SuperExec and the gateway (deploy/README.md section 7; "
                    "section 10 stops and starts them): they read the certificate at start; SuperNodes left running "
                    "reconnect by themselves"
                ),
                (
                    "parties change nothing (their ca.crt signs the new certificate); a party whose SuperNode exited on "
                    "the expired certificate starts it again"
                ),
            ],
        )
        return 0
    _report([key_path, cert_path], [superlink, "then, per party: edprf certs party --out <keys dir> --party-id <id>"])
    return 0


def _auth_rotation_steps(files, party: str) -> list[str]:
    """The ``next:`` lines of ``certs party --only auth``: deploy/README.md section 7's rotation, in its order.  The
    SuperNode keeps its command and service file: the new pair is moved over the current one once the coordinator
    has registered it, so no line names the new directory as the SuperNode's key (it is removed afterwards)."""
    return [
        (
            f"party: ssh-keygen -lf {_q(files.auth_pub)}   (read this fingerprint to the coordinator) and send it "
            f"{_q(files.auth_pub)}"
        ),
        (
            f"coordinator: check the fingerprint, then {quiet_flwr('supernode register <the file received> <connection>')}   "
            "(a new node id: write it next to the party's name)"
        ),
        (
            "party, only once the coordinator confirms the registration: move the new pair over the current one and "
            f"restart the SuperNode, whose command and service file stay as they are: mv {_q(files.auth_key)} "
            f"<keys dir>/{party}.auth.key; mv {_q(files.auth_pub)} <keys dir>/{party}.auth.key.pub; then remove "
            "this directory if it is now empty (deploy/README.md section 7)"
        ),
        (
            "coordinator: once the new node id is online (flwr supernode ls <connection>), flwr supernode unregister "
            "<old node id> <connection>"
        ),
        (
            f"keep the private key ({files.auth_key.name}) on the party's host only; leave signing-key in the node "
            "config as it is "
            "(<its current signing key, unchanged>)"
        ),
    ]


def run_party(args: argparse.Namespace) -> int:
    """``edprf certs party``: OpenSSH EC P-384 authentication key pair and release-signing key pair."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from protocol import check_party_id, generate_signing_key, key_id, save_private_key, save_public_key

    party = check_party_id(args.party_id)
    files = party_files(args.out, party)
    auth = args.only in (None, "auth")
    signing = args.only in (None, "signing")
    targets = ([files.auth_key, files.auth_pub] if auth else []) + (
        [files.signing_key, files.signing_pub] if signing else []
    )
    _refuse_overwrite(targets, args.force, f"keys of {party}")
    _make_dir(args.out)
    written = []
    if auth:
        key = ec.generate_private_key(ec.SECP384R1())
        private = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
        public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        written.append(_write(files.auth_key, private, private=True))
        written.append(_write(files.auth_pub, public + f" edprf-{party}\n".encode(), private=False))
    if signing:
        skey = generate_signing_key(args.signing_key_type)
        written.append(save_private_key(skey, files.signing_key))
        written.append(save_public_key(skey, files.signing_pub))
    if args.only == "auth":  # a SuperNode key rotation (review rev-day2 U10): section 7's order, not a new command
        _report(written, _auth_rotation_steps(files, party))
        return 0
    steps = []
    if auth:
        steps.append(
            f"coordinator: {quiet_flwr(f'supernode register {_q(files.auth_pub)} <connection>')}   "
            "(then unregister the node of any key this one replaces)"
        )
    if signing:
        steps.append(f"coordinator: cp {_q(files.signing_pub)} <keys-dir>/   (release-signing key id {key_id(skey)})")
    # a key this run did not write is the party's current one: the hint must not name a file that does not exist
    auth_key = _q(files.auth_key) if auth else "<its current SuperNode key, unchanged>"
    signing_key = files.signing_key if signing else "<its current signing key, unchanged>"
    steps.append(
        f"party: flower-supernode --superlink <coordinator's fleet address> --root-certificates ca.crt "
        f"--auth-supernode-private-key {auth_key} --host 127.0.0.1 --port <a free port, one per "
        f"SuperNode on the host> --node-config \"data-path='...' "
        f"schema-path='...' policy-path='...' ledger-path='...' signing-key='{signing_key}'\"   "
        "(deploy/README.md section 3: with --isolation process and its own flower-superexec)"
    )
    private_keys = [str(p) for p in (files.auth_key, files.signing_key) if p in written]
    steps.append(f"keep {' and '.join(private_keys)} on the party's host only")
    _report(written, steps)
    return 0
