"""Provenance: Ed25519 and EC P-384 signatures, key files, the party key registry."""

from __future__ import annotations

import os
import stat

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from protocol import (
    InvalidRelease,
    PartyKeyRegistry,
    Reason,
    SignatureStatus,
    decode_release,
    encode_release,
    generate_signing_key,
    key_id,
    load_private_key,
    load_public_key,
    save_private_key,
    save_public_key,
)
from protocol import release_pb2 as pb

from .tampering import tamper, tamper_envelope

pytestmark = pytest.mark.privacy  # in the gate: mutation campaign 3 (stop 56)

WALL = "wall_robot_navigation"


def refused(data, schema, policy, registry) -> InvalidRelease:
    with pytest.raises(InvalidRelease) as info:
        decode_release(data, schema, policy, registry)
    return info.value


@pytest.mark.parametrize("party", ["hospital-a", "hospital-b"])  # Ed25519, P-384
def test_signed_release_verifies(forests, party_keys, registry, policy, wall_schema, party):
    data = encode_release(forests[WALL, "binary"], party, party_keys[party])
    got = decode_release(data, wall_schema, policy, registry)
    assert got.signed and got.signature_status is SignatureStatus.VERIFIED
    assert got.key_id == key_id(party_keys[party]) == registry.key_id(party)
    expected = {"hospital-a": pb.SIGNATURE_ALGORITHM_ED25519, "hospital-b": pb.SIGNATURE_ALGORITHM_ECDSA_P384_SHA384}
    assert pb.SignedRelease.FromString(data).algorithm == expected[party]


def test_without_registry_a_signature_is_not_claimed_verified(signed_wall_release, wall_schema, policy):
    got = decode_release(signed_wall_release, wall_schema, policy)
    assert not got.signed and got.signature_status is SignatureStatus.UNVERIFIED


def test_unsigned_with_registry(forests, registry, policy, wall_schema):
    data = encode_release(forests[WALL, "binary"], "hospital-a")
    assert refused(data, wall_schema, policy, registry).reason is Reason.UNSIGNED


def test_unknown_party(forests, party_keys, registry, policy, wall_schema):
    data = encode_release(forests[WALL, "binary"], "outsider", party_keys["outsider"])
    err = refused(data, wall_schema, policy, registry)
    assert err.reason is Reason.UNKNOWN_PARTY and "outsider" in err.message


def test_signature_of_another_party_is_bad(forests, party_keys, registry, policy, wall_schema):
    """hospital-a signs (validly, with its own key) a release that claims to be hospital-b's."""
    data = encode_release(forests[WALL, "binary"], "hospital-b", party_keys["hospital-a"])
    err = refused(data, wall_schema, policy, registry)
    assert err.reason is Reason.BAD_SIGNATURE and "key id" in err.message
    # what it says, within what a coordinator's report keeps of it (server.MAX_PARTY_TEXT); the quoting whole
    shown = f"({key_id(party_keys['hospital-a'])[:23]}...) than the one registered now for party 'hospital-b' "
    assert f"signed with another key {shown}({registry.key_id('hospital-b')[:23]}...): a rotated key?" in err.message
    assert len(err.message) <= 200
    # claiming hospital-b's key id does not help: the signature does not verify under it
    forged = tamper_envelope(data, lambda s: setattr(s, "key_id", registry.key_id("hospital-b")))
    err = refused(forged, wall_schema, policy, registry)
    assert err.reason is Reason.BAD_SIGNATURE and "does not verify" in err.message


def test_relabelling_a_signed_release_breaks_it(signed_wall_release, party_keys, registry, policy, wall_schema):
    def relabel(release):
        release.party_id = "hospital-b"

    signed = pb.SignedRelease.FromString(signed_wall_release)
    relabelled = tamper(signed_wall_release, relabel)
    forged = tamper_envelope(
        relabelled,
        lambda s: s.MergeFrom(
            pb.SignedRelease(signature=signed.signature, key_id=signed.key_id, algorithm=signed.algorithm)
        ),
    )
    assert refused(forged, wall_schema, policy, registry).reason is Reason.BAD_SIGNATURE


def test_tampered_content_with_the_original_signature(signed_wall_release, registry, policy, wall_schema):
    signed = pb.SignedRelease.FromString(signed_wall_release)
    lowered = tamper(signed_wall_release, lambda r: setattr(r.parameters, "epsilon", 0.5))
    forged = tamper_envelope(
        lowered,
        lambda s: s.MergeFrom(
            pb.SignedRelease(signature=signed.signature, key_id=signed.key_id, algorithm=signed.algorithm)
        ),
    )
    assert refused(forged, wall_schema, policy, registry).reason is Reason.BAD_SIGNATURE


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: setattr(s, "signature", bytes([s.signature[0] ^ 1]) + s.signature[1:]),
        lambda s: setattr(s, "signature", s.signature[:-1]),
        lambda s: setattr(s, "signature", b"\x00" * 200),
        lambda s: setattr(s, "algorithm", pb.SIGNATURE_ALGORITHM_ECDSA_P384_SHA384),
        lambda s: setattr(s, "algorithm", pb.SIGNATURE_ALGORITHM_UNSPECIFIED),
        lambda s: setattr(s, "algorithm", 42),
        lambda s: setattr(s, "key_id", "sha256:00"),
        lambda s: (s.ClearField("signature"),),  # key id and algorithm left on an "unsigned" release
    ],
)
def test_tampered_envelope_is_bad_signature(signed_wall_release, registry, policy, wall_schema, edit):
    err = refused(tamper_envelope(signed_wall_release, edit), wall_schema, policy, registry)
    assert err.reason is Reason.BAD_SIGNATURE


def test_p384_key_and_ed25519_algorithm_mismatch(forests, party_keys, registry, policy, wall_schema):
    data = encode_release(forests[WALL, "binary"], "hospital-b", party_keys["hospital-b"])
    forged = tamper_envelope(data, lambda s: setattr(s, "algorithm", pb.SIGNATURE_ALGORITHM_ED25519))
    assert refused(forged, wall_schema, policy, registry).reason is Reason.BAD_SIGNATURE


# ------------------------------------------------------------------ key files
@pytest.mark.parametrize("kind", ["ed25519", "p384"])
def test_private_key_file_round_trip_with_mode_0600(tmp_path, kind):
    key = generate_signing_key(kind)
    path = save_private_key(key, tmp_path / "party.key.pem")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert key_id(load_private_key(path)) == key_id(key)
    secret = save_private_key(key, tmp_path / "enc.key.pem", password=b"correct horse")
    assert b"ENCRYPTED" in secret.read_bytes()
    assert key_id(load_private_key(secret, password=b"correct horse")) == key_id(key)
    with pytest.raises((TypeError, ValueError)):
        load_private_key(secret)


def test_loose_private_key_permissions_are_refused(tmp_path):
    path = save_private_key(generate_signing_key(), tmp_path / "party.key.pem")
    os.chmod(path, 0o644)
    with pytest.raises(PermissionError, match="expected file mode 0600, got 0644"):
        load_private_key(path)
    load_private_key(path, check_mode=False)


@pytest.mark.parametrize("kind", ["ed25519", "p384"])
def test_public_key_file_round_trip(tmp_path, kind):
    key = generate_signing_key(kind)
    path = save_public_key(key, tmp_path / "p.pub.pem")
    assert path.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    assert key_id(load_public_key(path)) == key_id(key)


@pytest.mark.parametrize(
    "other",
    [
        lambda: ec.generate_private_key(ec.SECP256R1()),
        lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
    ],
)
def test_unsupported_keys_are_refused(tmp_path, forests, other):
    key = other()
    with pytest.raises(ValueError, match="Ed25519 or EC P-384"):
        encode_release(forests[WALL, "binary"], "a", key)
    with pytest.raises(ValueError, match="Ed25519 or EC P-384"):
        PartyKeyRegistry({"a": key.public_key()})
    from cryptography.hazmat.primitives import serialization

    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    (tmp_path / "a.pub.pem").write_bytes(pem)
    with pytest.raises(ValueError, match="Ed25519 or EC P-384"):
        PartyKeyRegistry.from_directory(tmp_path)


def test_unknown_key_kind():
    with pytest.raises(ValueError, match="expected one of"):
        generate_signing_key("rsa")


def test_registry_from_directory(tmp_path, party_keys, forests, policy, wall_schema):
    for party in ("hospital-a", "hospital-b"):
        save_public_key(party_keys[party], tmp_path / f"{party}.pub.pem")
    (tmp_path / "README.md").write_text("not a key")
    registry = PartyKeyRegistry.from_directory(tmp_path)
    assert sorted(registry) == ["hospital-a", "hospital-b"] and len(registry) == 2
    data = encode_release(forests[WALL, "binary"], "hospital-b", party_keys["hospital-b"])
    assert decode_release(data, wall_schema, policy, registry).signed


def test_registry_refuses_bad_files(tmp_path):
    (tmp_path / "bad name.pub.pem").write_text("x")
    with pytest.raises(ValueError, match="party id"):
        PartyKeyRegistry.from_directory(tmp_path)
    (tmp_path / "bad name.pub.pem").unlink()
    (tmp_path / "a.pub.pem").write_text("-----BEGIN PUBLIC KEY-----\ngarbage\n-----END PUBLIC KEY-----\n")
    with pytest.raises(ValueError, match="expected a PEM public key"):
        PartyKeyRegistry.from_directory(tmp_path)
    with pytest.raises(ValueError, match="expected a directory"):
        PartyKeyRegistry.from_directory(tmp_path / "missing")
