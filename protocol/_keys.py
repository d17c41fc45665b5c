"""Signing keys of parties: generation, PEM files, key ids.

Two kinds are supported: Ed25519 (small, deterministic signatures) and EC
P-384 with ECDSA/SHA-384 (a NIST curve, for deployments that require one;
Flower's SuperNode authentication also uses NIST-curve EC keys).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Literal

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from . import release_pb2 as pb
from ._atomic_file import save_atomic

__all__ = [
    "KEY_KINDS",
    "KeyKind",
    "PrivateKey",
    "PublicKey",
    "generate_signing_key",
    "key_algorithm",
    "key_id",
    "load_private_key",
    "load_public_key",
    "save_private_key",
    "save_public_key",
]

KeyKind = Literal["ed25519", "p384"]
KEY_KINDS: tuple[str, ...] = ("ed25519", "p384")
PrivateKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey
PublicKey = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey


def generate_signing_key(kind: KeyKind = "ed25519") -> PrivateKey:
    """A new private key of ``kind`` ("ed25519" or "p384")."""
    if kind == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    if kind == "p384":
        return ec.generate_private_key(ec.SECP384R1())
    raise ValueError(f"key kind: expected one of {KEY_KINDS}, got {kind!r}")


def key_algorithm(key: PrivateKey | PublicKey) -> int:
    """The wire ``SignatureAlgorithm`` of a supported key; ValueError otherwise."""
    if isinstance(key, (ed25519.Ed25519PrivateKey, ed25519.Ed25519PublicKey)):
        return pb.SIGNATURE_ALGORITHM_ED25519
    if isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)) and isinstance(key.curve, ec.SECP384R1):
        return pb.SIGNATURE_ALGORITHM_ECDSA_P384_SHA384
    curve = getattr(getattr(key, "curve", None), "name", None)
    got = type(key).__name__ + (f" on {curve}" if curve else "")
    raise ValueError(f"key: expected an Ed25519 or EC P-384 (secp384r1) key, got {got}")


def _public(key: PrivateKey | PublicKey) -> PublicKey:
    return key.public_key() if isinstance(key, (ed25519.Ed25519PrivateKey, ec.EllipticCurvePrivateKey)) else key


def key_id(key: PrivateKey | PublicKey) -> str:
    """``"sha256:<hex>"`` of the public key's SubjectPublicKeyInfo DER."""
    key_algorithm(key)
    der = _public(key).public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(der).hexdigest()


def save_private_key(key: PrivateKey, path: str | Path, password: bytes | None = None) -> Path:
    """Write ``key`` as PKCS#8 PEM with file mode 0600 (atomically).

    Parameters
    ----------
    key : Ed25519 or EC P-384 private key
    path : str or Path
    password : bytes, optional
        Encrypts the PEM (best available encryption) when given.
    """
    key_algorithm(key)
    encryption = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    return save_atomic(path, pem, mode=0o600)


def save_public_key(key: PrivateKey | PublicKey, path: str | Path) -> Path:
    """Write the public half of ``key`` as SubjectPublicKeyInfo PEM (mode 0644)."""
    key_algorithm(key)
    pem = _public(key).public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return save_atomic(path, pem, mode=0o644)


def load_private_key(path: str | Path, password: bytes | None = None, check_mode: bool = True) -> PrivateKey:
    """Read a private key PEM written by :func:`save_private_key`.

    Parameters
    ----------
    path : str or Path
    password : bytes, optional
    check_mode : bool, default True
        On POSIX, refuse a file that group or others may read or write (as
        ssh does); the key signs releases in the party's name.
    """
    path = Path(path)
    if check_mode and os.name == "posix":
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            raise PermissionError(f"private key {path}: expected file mode 0600, got {mode:04o} (chmod 600 it)")
    key = serialization.load_pem_private_key(path.read_bytes(), password=password)
    key_algorithm(key)
    return key


def load_public_key(path: str | Path) -> PublicKey:
    """Read a SubjectPublicKeyInfo PEM (Ed25519 or EC P-384)."""
    path = Path(path)
    try:
        key = serialization.load_pem_public_key(path.read_bytes())
    except ValueError as exc:
        raise ValueError(f"public key {path}: expected a PEM public key, got unreadable data ({exc})") from None
    try:
        key_algorithm(key)
    except ValueError as exc:
        raise ValueError(f"public key {path}: {exc}") from None
    return key
