"""A cheap look at a GlobalModel: sizes and fingerprints, without decoding trees or the schema.

A party asked to evaluate a global model must bound the work before it
spends anything: this reads the protobuf wire format directly, walking only
the fields it needs (GlobalModel 1/2/3, SignedRelease 1, Release 1/2/5,
Trees 1/2) and skipping every other field by its wire type, so models in a
later format with new fields still yield a header.  No tree array, schema or
manifest is materialised: packed repeated integers are counted by their
terminating bytes with one vectorized pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._envelope import as_bytes
from ._errors import InvalidRelease, Reason

__all__ = ["ModelHeader", "peek_global_model"]

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5


@dataclass(frozen=True)
class ModelHeader:
    """What a GlobalModel declares about its size, read without decoding it.

    Attributes
    ----------
    format_version : int
        Of the GlobalModel (0 when absent).
    n_bytes : int
        Size of the whole model.
    schema_toml_bytes : int
        Length of the embedded schema text (not parsed).
    schema_fingerprints : tuple of str
        The distinct fingerprints the releases carry, sorted.
    n_releases, n_trees, n_nodes : int
        Counts of releases, of trees (entries of ``nodes_per_tree``) and of nodes
        (entries of ``feature``) over all releases, as sent (not validated).
    """

    format_version: int
    n_bytes: int
    schema_toml_bytes: int
    schema_fingerprints: tuple[str, ...]
    n_releases: int
    n_trees: int
    n_nodes: int

    @property
    def fingerprint(self) -> str:
        """The releases' common schema fingerprint, or "" if they carry none or several."""
        return self.schema_fingerprints[0] if len(self.schema_fingerprints) == 1 else ""


def _malformed(what: str) -> InvalidRelease:
    return InvalidRelease(Reason.MALFORMED, f"global model: {what}")


def _varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _malformed("truncated or overlong varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(buf: memoryview, start: int, end: int):
    """Yield (field number, wire type, value or (start, end) of a length-delimited field)."""
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _malformed("field number 0")
        if wire == _VARINT:
            value, pos = _varint(buf, pos, end)
            yield number, wire, value
        elif wire == _LEN:
            length, pos = _varint(buf, pos, end)
            if length > end - pos:
                raise _malformed("length-delimited field runs past its message")
            yield number, wire, (pos, pos + length)
            pos += length
        elif wire in (_FIXED64, _FIXED32):
            pos += 8 if wire == _FIXED64 else 4
            if pos > end:
                raise _malformed("truncated fixed-width field")
        else:
            raise _malformed(f"unsupported wire type {wire}")


def _count_varints(buf: memoryview, start: int, end: int) -> int:
    """Number of varints in a packed field: bytes without the continuation bit."""
    if end <= start:
        return 0
    chunk = np.frombuffer(buf[start:end], dtype=np.uint8)
    if chunk[-1] >= 0x80:
        raise _malformed("truncated packed field")
    return int(np.count_nonzero(chunk < 0x80))


def _count_repeated(buf: memoryview, wire: int, value: object) -> int:
    if wire == _LEN:
        start, end = value  # type: ignore[misc]
        return _count_varints(buf, start, end)
    return 1 if wire == _VARINT else 0


def peek_global_model(data: bytes | bytearray | memoryview, max_bytes: int) -> ModelHeader:
    """Read a GlobalModel's declared sizes and fingerprints without decoding trees or schema.

    Parameters
    ----------
    data : bytes
        The model as received (untrusted).
    max_bytes : int
        Refused above this size, before anything is read.

    Returns
    -------
    ModelHeader

    Raises
    ------
    InvalidRelease
        ``too_large`` above ``max_bytes``; ``malformed`` for broken wire format.

    Time is linear in the number of fields outside the tree arrays plus one vectorized pass
    over the tree arrays; memory is O(1) beyond ``data`` (views, no copies of the arrays).
    Unknown fields (a later format) are skipped.  Nothing here is validated beyond the wire
    format: use :func:`protocol.load_global_model` once the header is acceptable.
    """
    raw = as_bytes(data) if not isinstance(data, (bytes, memoryview)) else data
    if len(raw) > max_bytes:
        raise InvalidRelease(Reason.TOO_LARGE, f"global model: expected at most {max_bytes} bytes, got {len(raw)}")
    buf = memoryview(raw).cast("B") if isinstance(raw, memoryview) else memoryview(raw)
    version = schema_len = n_releases = n_trees = n_nodes = 0
    fingerprints: set[str] = set()
    for number, wire, value in _fields(buf, 0, len(buf)):
        if number == 1 and wire == _VARINT:
            version = int(value)  # type: ignore[arg-type]
        elif number == 2 and wire == _LEN:
            schema_len += value[1] - value[0]  # type: ignore[index]
        elif number == 3 and wire == _LEN:
            n_releases += 1
            for s_number, s_wire, s_value in _fields(buf, *value):  # SignedRelease
                if s_number != 1 or s_wire != _LEN:
                    continue
                for r_number, r_wire, r_value in _fields(buf, *s_value):  # Release
                    if r_number == 2 and r_wire == _LEN:
                        a, b = r_value
                        if b - a > 256:
                            raise _malformed("schema fingerprint longer than 256 bytes")
                        fingerprints.add(bytes(buf[a:b]).decode("utf-8", errors="replace"))
                    elif r_number == 5 and r_wire == _LEN:
                        for t_number, t_wire, t_value in _fields(buf, *r_value):  # Trees
                            if t_number == 1:
                                n_trees += _count_repeated(buf, t_wire, t_value)
                            elif t_number == 2:
                                n_nodes += _count_repeated(buf, t_wire, t_value)
    return ModelHeader(
        format_version=version,
        n_bytes=len(buf),
        schema_toml_bytes=schema_len,
        schema_fingerprints=tuple(sorted(fingerprints)),
        n_releases=n_releases,
        n_trees=n_trees,
        n_nodes=n_nodes,
    )
