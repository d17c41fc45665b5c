"""Progress lines for long work: the callback type, its silent default, a stage timer and a throttled counter.

The library calls a ``progress`` callback with one line of text at a time and never prints; the ``edprf``
commands pass one that writes to stderr (their results go to stdout).  Progress is local output: it is never
logged, sent to the coordinator or put into a party's reply.  Standard library only: the ``edprf`` parser
imports nothing heavy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["PROGRESS_EVERY", "Progress", "Throttle", "file_text", "quiet", "seconds_text", "size_text", "stage"]

Progress = Callable[[str], object]
"""Receives one line of progress text at a time (the command prints it; the default drops it)."""

PROGRESS_EVERY = 5.0
"""Seconds between two count lines of a loop (parties, trees, chunks of rows), at least."""

Clock = Callable[[], float]


def quiet(_: str) -> None:
    """The default ``progress``: says nothing."""


_quiet = quiet  # the name the simulation's modules import


def seconds_text(seconds: float) -> str:
    """A duration as people read it: ``"0.4 s"``, ``"12 s"``, ``"3 min 05 s"``."""
    if seconds < 10:
        return f"{max(seconds, 0.0):.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def size_text(n_bytes: int) -> str:
    """A size in decimal units, as file managers show it: ``"812 bytes"``, ``"192.5 MB"``, ``"1.9 GB"``."""
    if n_bytes < 1000:
        return f"{n_bytes} bytes"
    for unit in ("kB", "MB", "GB"):
        n_bytes /= 1000
        if n_bytes < 1000 or unit == "GB":
            return f"{n_bytes:.1f} {unit}"
    raise AssertionError("unreachable")


def file_text(path: str | Path) -> str:
    """``path (its size)``; the path alone when its size cannot be read (the read will say why)."""
    try:
        return f"{path} ({size_text(Path(path).stat().st_size)})"
    except OSError:
        return str(path)


@contextmanager
def stage(progress: Progress, start: str, done: str = "      done", clock: Clock = time.monotonic) -> Iterator[None]:
    """Say ``start``, run the block, then say ``done`` with the block's duration (``"      done in 12 s"``).

    A block that raises says nothing more: its error is what the command reports.
    """
    progress(start)
    t0 = clock()
    yield
    progress(f"{done} in {seconds_text(clock() - t0)}")


class Throttle:
    """Count lines of a loop at most every ``every`` seconds (default :data:`PROGRESS_EVERY`) of ``clock`` (tests
    inject a fake clock).

    ``throttle.tick(lambda: f"trained {k} of {n} parties")`` says the line when ``every`` seconds have passed
    since the last line said (or since ``started``, by default when the throttle was made) and returns whether it
    did; the text is built only then.
    """

    def __init__(
        self,
        progress: Progress,
        every: float | None = None,
        clock: Clock = time.monotonic,
        started: float | None = None,
    ) -> None:
        self._progress = progress
        self._every = PROGRESS_EVERY if every is None else every  # read now: tests may set the module's
        self._clock = clock
        self.started = clock() if started is None else started
        self._last = self.started

    def tick(self, text: Callable[[], str], now: float | None = None) -> bool:
        """``now``: a reading of ``clock`` the caller already made (a timeout's clock is read once per look)."""
        now = self._clock() if now is None else now
        if now - self._last < self._every:
            return False
        self._last = now
        self._progress(text())
        return True

    def elapsed(self) -> float:
        """Seconds of ``clock`` since the throttle was made."""
        return self._clock() - self.started
