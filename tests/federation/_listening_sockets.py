"""Listening TCP sockets of a process tree, read from /proc (no psutil): for the loopback-only tests."""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from pathlib import Path

from edprf_fl.cli._child_process import descendants as process_descendants

__all__ = ["descendants", "listening_addresses", "non_loopback"]

_LISTEN = "0A"


def descendants(root: int) -> set[int]:
    """``root`` and every live process below it."""
    return process_descendants(root) | {root}


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def _address(hex_address: str, v6: bool) -> str:
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    if v6:  # four 32-bit words, each in host byte order
        raw = b"".join(struct.pack("=I", struct.unpack(">I", raw[i : i + 4])[0]) for i in range(0, 16, 4))
        return f"[{socket.inet_ntop(socket.AF_INET6, raw)}]:{int(port, 16)}"
    return f"{socket.inet_ntop(socket.AF_INET, struct.pack('=I', struct.unpack('>I', raw)[0]))}:{int(port, 16)}"


def _interfaces(pid: int) -> set[str]:
    """Network interfaces of ``pid``'s network namespace."""
    try:
        rows = Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]
    except OSError:
        return set()
    return {row.split(":", 1)[0].strip() for row in rows if ":" in row}


def listening_addresses(pids: set[int], exposed_only: bool = False) -> set[str]:
    """``host:port`` of every TCP socket in LISTEN state owned by one of ``pids``.

    Each process's sockets are looked up in its own network namespace
    (``/proc/<pid>/net/tcp``).  With ``exposed_only``, listeners in a namespace
    whose only interface is ``lo`` are left out: nothing outside can reach them.
    """
    found = set()
    for pid in pids:
        inodes = _socket_inodes(pid)
        if not inodes or (exposed_only and _interfaces(pid) <= {"lo"}):
            continue
        for table, v6 in ((f"/proc/{pid}/net/tcp", False), (f"/proc/{pid}/net/tcp6", True)):
            try:
                rows = Path(table).read_text().splitlines()[1:]
            except OSError:
                continue
            for row in rows:
                fields = row.split()
                if fields[3] == _LISTEN and fields[9] in inodes:
                    found.add(_address(fields[1], v6))
    return found


def non_loopback(addresses: set[str]) -> set[str]:
    """The addresses not in 127.0.0.0/8 or ::1 (0.0.0.0 and :: count as non-loopback)."""
    bad = set()
    for address in addresses:
        host = address.rsplit(":", 1)[0].strip("[]")
        ip = ipaddress.ip_address(host)
        if getattr(ip, "ipv4_mapped", None):
            ip = ip.ipv4_mapped
        if not ip.is_loopback:
            bad.add(address)
    return bad
