"""Text read from files, made safe to print on an operator's terminal.

Ledgers, releases and global models are untrusted files: a string in them may hold
terminal escape sequences (ESC, CSI), carriage returns, bidirectional overrides or
other characters that rewrite what the operator sees.  Every such string goes
through :func:`terminal_safe` before ``edprf`` prints it: unprintable characters
are shown as Python escapes (``\\x1b``, ``\\u202e``) and the text is cut to a length.
"""

from __future__ import annotations

__all__ = ["MAX_SHOWN_CHARS", "terminal_safe"]

MAX_SHOWN_CHARS = 1000
"""Longest file string printed as is; longer ones are cut and marked."""


def _escaped(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_safe(text: object, max_chars: int = MAX_SHOWN_CHARS) -> str:
    """``text`` as one printable line: every unprintable character escaped, at most ``max_chars`` shown.

    Unprintable means what :meth:`str.isprintable` says: control characters (C0, C1, DEL),
    format characters (bidirectional overrides, zero-width marks), line and paragraph
    separators, surrogates, private-use and unassigned code points; the space is kept.
    The cut is made before escaping, so the output is at most about ``10 * max_chars``
    characters whatever the input.
    """
    raw = text if isinstance(text, str) else str(text)
    cut = raw[:max_chars]
    shown = cut if cut.isprintable() else "".join(c if c.isprintable() else _escaped(c) for c in cut)
    return shown + (f"... ({len(raw) - max_chars} more characters)" if len(raw) > max_chars else "")
