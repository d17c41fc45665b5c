"""The ledger's anchor: a second record of what a party has spent, so that a ledger restored from a backup,
replaced or lost does not hand the party its budget again.

The anchor is a small file beside the ledger (``ledger-anchor.json`` beside ``ledger.sqlite``: a name that the
``ledger.sqlite*`` files a backup of the ledger copies do not cover).  It holds the ledger's id (a random
token the ledger keeps in its ``ledger_meta`` table) and the ε the ledger had spent, exactly, as of its last
reservation.  When a ledger is opened and holds less than its anchor records, the difference is written into
the ledger as spent (an entry whose request id starts with ``carried-``) before any request is served:

- the same ledger with less spent (a copy restored from a backup): the difference;
- another ledger (another id), or a new one where the ledger was lost: all that the anchor records, once: the
  ledger keeps what it carried from that id (``carried-from/<id>``, in the carry's transaction), so an opening
  that finds the same anchor again (its rewrite failed or was killed, or two processes opened at once) carries
  only what it has not carried yet.

So a party's accounting never goes backwards: invariant 4 holds across a restore.

Since 0.2.2 the anchor also keeps the held-out split (:mod:`client._held_out_record`): the ledger's secret salt and
the smallest ``holdout-fraction`` any of its releases trained under. A ledger opened without a salt (lost, or
restored from a backup taken before it had one) takes the anchor's; a ledger with the anchor's salt and a larger
smallest fraction (a backup older than a release) takes the anchor's fraction, kept with its rule. So the party
holds out the same rows as before the loss, and no release the lost records describe trained on a row it evaluates
on, whatever a model says of its releases (a coordinator can relabel one). A ledger with a salt of its own (another
ledger put in its place) keeps it: its split is its own, and its releases are its own. The salt makes the anchor as
secret as the ledger: it is written readable by its owner only, and never leaves the party.

A stale anchor (one that lags its ledger, after a crash between a reservation and the anchor's write) records
less, never more, than was spent, and is rewritten at the next opening.

Limit: restoring the anchor together with the ledger (a snapshot of the whole directory or machine) defeats
it; a party's storage must not be rolled back (``deploy/README.md``).  Privacy cost: none (it records ε).
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from protocol import save_atomic

from ._held_out_record import recorded_fraction

__all__ = [
    "CARRIED_FROM_KEY",
    "LEDGER_ID_KEY",
    "LedgerAnchor",
    "anchor_path",
    "carried",
    "carried_before",
    "read_anchor",
    "remove_stale_temp_files",
    "sweep_temp_files",
    "write_anchor",
]

LEDGER_ID_KEY = "ledger-id"
"""The ``ledger_meta`` key of the ledger's id."""
CARRIED_FROM_KEY = "carried-from"
"""The ``ledger_meta`` key prefix of what a ledger carried from another ledger's anchor: ``carried-from/<its id>``
holds the exact ε (``"n/d"``) carried from that id so far, written in the carry's transaction, so that an opening
that finds the other id's anchor again (its rewrite failed, was killed, or raced another opening) carries only what
it has not carried yet."""

_ID = re.compile(r"[0-9a-f]{32}")
_EXACT = re.compile(r"\d{1,400}(/[1-9]\d{0,399})?")
_SALT = "holdout-salt"
_SPLIT = "holdout-split"
_SPLIT_RECORD = re.compile(r"[a-z0-9-]{1,40}( fraction=[0-9.e+-]{1,30})?")


@dataclass(frozen=True)
class LedgerAnchor:
    """What a ledger had spent as of its last reservation (its id and the exact ε), and its held-out split.

    ``salt``: the ledger's held-out salt (32 hex digits), None before it has one or in an anchor written before
    0.2.2.  ``smallest_split``: the split record, rule and fraction, of the smallest fraction in [0, 1) its releases
    recorded under today's rule (``"readings-v2 fraction=0.2"``, :func:`client._held_out_record.held_out_split`),
    None when none did.  The rule is kept with the fraction: a version with another rule reads it as another rule's.
    """

    ledger_id: str
    spent: Fraction
    salt: str | None = None
    smallest_split: str | None = None


def anchor_path(ledger_path: Path) -> Path:
    """The anchor of the ledger at ``ledger_path`` (``ledger.sqlite`` -> ``ledger-anchor.json``)."""
    return ledger_path.with_name(f"{ledger_path.stem}-anchor.json")


def read_anchor(path: Path) -> LedgerAnchor | None:
    """The anchor at ``path``, or None when there is none.

    Raises
    ------
    ValueError
        The file is not an anchor (a party refuses to serve rather than guess what it spent).
    """
    if path.is_symlink() and not path.exists():
        raise ValueError(
            f"ledger anchor {path} is a symbolic link to {os.readlink(path)}, which does not exist (a volume that "
            "is not mounted, or a restore that left the link without the anchor?): it records what the party spent, "
            "so the party refuses to serve rather than write a new anchor in place of the link; mount or restore "
            "its target"
        )
    if not path.exists():
        return None
    try:
        data = json.loads(_read_small_regular_file(path).decode("utf-8"))
        ledger_id, spent = data["ledger"], data["spent"]
        if not (isinstance(ledger_id, str) and _ID.fullmatch(ledger_id)):
            raise ValueError("ledger")
        if not (isinstance(spent, str) and _EXACT.fullmatch(spent)):
            raise ValueError("spent")
        salt, split = data.get(_SALT), data.get(_SPLIT)
        if not (salt is None or (isinstance(salt, str) and _ID.fullmatch(salt))):
            raise ValueError("salt")
        if not (split is None or (isinstance(split, str) and _SPLIT_RECORD.fullmatch(split))):
            raise ValueError("split")
        fraction = recorded_fraction(split)
        if fraction is not None and not 0 <= fraction < 1:
            raise ValueError("fraction")
        return LedgerAnchor(ledger_id, Fraction(spent), salt, split)
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError, AttributeError):
        raise ValueError(
            f'ledger anchor {path}: expected {{"ledger": <32 hex digits>, "spent": "<n>/<d>"}} (and, from 0.2.2, '
            f'"{_SALT}": <32 hex digits>, "{_SPLIT}": "<rule> fraction=<in [0, 1)>"), got something else (damaged?); it '
            "records what the party spent and is never backed up. If an intact ledger is beside it and is the current "
            "one (not restored from a backup, not replaced), move this file aside (never delete the ledger) and the "
            "party writes a new anchor from the ledger at its next request: until then nothing protects against an "
            "older copy of the ledger restored in its place (it would count less than the party spent). If the ledger "
            "is lost, restored or replaced, keep the anchor: it is the record of the spend the ledger lacks"
        ) from None


_MAX_ANCHOR_BYTES = 4096
"""An anchor is about 80 bytes: a larger file is not one (and is never read whole)."""


def _read_small_regular_file(path: Path) -> bytes:
    """The bytes of the regular file at ``path``, at most :data:`_MAX_ANCHOR_BYTES`: a FIFO, a device or a
    directory is refused without blocking (opened non-blocking, checked with ``fstat``), a larger file too.

    Raises
    ------
    ValueError
        Not a regular file, or larger than an anchor can be.
    OSError
        The file cannot be opened or read.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        data = os.read(fd, _MAX_ANCHOR_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > _MAX_ANCHOR_BYTES:
        raise ValueError("larger than an anchor")
    return data


def write_anchor(path: Path, anchor: LedgerAnchor) -> None:
    """Write ``anchor`` to ``path`` atomically, readable by its owner only (it holds the held-out salt)."""
    fields = {"ledger": anchor.ledger_id, "spent": str(anchor.spent)}
    if anchor.salt is not None:
        fields[_SALT] = anchor.salt
    if anchor.smallest_split is not None:
        fields[_SPLIT] = anchor.smallest_split
    text = json.dumps(fields)
    save_atomic(path, text.encode("utf-8"), mode=0o600)


def carried(
    anchor: LedgerAnchor | None, ledger_id: str | None, spent: Fraction, before: Fraction = Fraction(0)
) -> Fraction:
    """ε the anchor records that the ledger (id ``ledger_id``, ``spent`` so far) does not hold.

    The same ledger: what the anchor records beyond ``spent`` (a restored copy holds less).  Another ledger,
    or none (``ledger_id`` None): what the anchor records beyond ``before``, what the ledger already carried from
    that anchor's id (:data:`CARRIED_FROM_KEY`; 0 for none), which that ledger never held otherwise.
    """
    if anchor is None:
        return Fraction(0)
    if anchor.ledger_id != ledger_id:
        return max(Fraction(0), anchor.spent - before)
    return max(Fraction(0), anchor.spent - spent)


def carried_before(text: str | None) -> Fraction:
    """What a ledger's ``carried-from/<id>`` value says it carried (``"n/d"``); 0 for none or for text of another
    form (the file is untrusted: 0 carries the anchor's whole figure again, the side that never counts less)."""
    if not (isinstance(text, str) and _EXACT.fullmatch(text)):
        return Fraction(0)
    return Fraction(text)


_TEMP_NAME = r"[a-z0-9_]{8}\.tmp"
"""The random part and suffix of :func:`protocol.save_atomic`'s temporary files (:func:`tempfile.mkstemp`'s)."""


def remove_stale_temp_files(path: Path, suffixes: Sequence[str] = (), older_than: float = 0.0) -> list[Path]:
    """Remove what an atomic write of ``path`` left of its temporary files (a kill inside
    :func:`protocol.save_atomic`, or inside :func:`client.backup_ledger`): regular files named ``.<name>.<8
    characters>.tmp`` beside it, optionally followed by one of ``suffixes`` (SQLite's files beside a copy), owned by
    this user and, with ``older_than``, untouched for that many seconds; nothing else; the removed files.

    For the anchor, called under the ledger's write lock: anchors are written under it only, so no temporary file
    of a write in progress is removed.  A caller without such a lock gives ``older_than`` instead.  A file that
    cannot be removed is left (it holds nothing the party reads).
    """
    return sweep_temp_files(path, suffixes, older_than)[0]


def sweep_temp_files(path: Path, suffixes: Sequence[str], older_than: float) -> tuple[list[Path], list[Path]]:
    """:func:`remove_stale_temp_files`, and the temporary files it left for being touched in the last
    ``older_than`` seconds (a write of ``path`` in progress, or one stopped since: named, not removed), from one
    listing of the directory: ``(removed, recent)``."""
    removed, recent = [], []
    now = time.time()
    for temp, modified in _own_temp_files(path, suffixes):
        if older_than > 0 and now - modified <= older_than:
            recent.append(temp)
            continue
        try:
            temp.unlink()
        except OSError:
            continue
        removed.append(temp)
    return removed, recent


def _own_temp_files(path: Path, suffixes: Sequence[str]) -> list[tuple[Path, float]]:
    """The temporary files of an atomic write of ``path`` (see :func:`remove_stale_temp_files`) that are regular
    files owned by this user, by name, each with its modification time."""
    tail = "(" + "|".join(map(re.escape, suffixes)) + ")?" if suffixes else ""
    pattern = re.compile(re.escape(f".{path.name}.") + _TEMP_NAME + tail)
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    found = []
    for name in sorted(names):
        if not pattern.fullmatch(name):
            continue
        temp = path.parent / name
        try:
            st = temp.lstat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
            found.append((temp, st.st_mtime))
    return found
