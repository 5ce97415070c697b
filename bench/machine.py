"""The header every bench prints above its table: the machine, the versions, and N.

A figure means little without where it was measured: two cores shared with
other work and a laptop's eight give different jobs/s for the same code. Each
bench calls ``print_header(title, n)`` before its table, so a pasted table
always carries its machine (cores, CPU model, memory), the versions that move
the figures (Python, valkey-server, redis-py, hiredis, bullmq) and N.

    from machine import print_header   # bench/ is the script's own folder on sys.path
"""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata

from echomq_teach.nodes.server import server_binary


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (or what the platform says)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def memory_bytes() -> int:
    """The machine's memory (MemTotal), in bytes; 0 when unknown."""
    return _meminfo("MemTotal")


def available_bytes() -> int:
    """The memory available to new processes now (MemAvailable), in bytes; 0 when unknown."""
    return _meminfo("MemAvailable")


def _meminfo(field: str) -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def valkey_version() -> str:
    """``valkey-server --version``'s ``v=`` field, or "?"."""
    try:
        out = subprocess.run([server_binary(), "--version"], capture_output=True, text=True, timeout=10).stdout
    except Exception:  # noqa: BLE001 - a header line must never stop a bench
        return "?"
    return next((w[2:] for w in out.split() if w.startswith("v=")), "?")


def package_version(name: str) -> str:
    """An installed distribution's version, or "absent"."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def header(title: str, n: object, packages: tuple[str, ...] = ("redis", "hiredis", "bullmq")) -> str:
    """Three lines: the title with N, the machine, the versions."""
    gib = memory_bytes() / 2**30
    versions = " · ".join(
        [f"Python {platform.python_version()}", f"valkey-server {valkey_version()}"]
        + [f"{'redis-py' if p == 'redis' else p} {package_version(p)}" for p in packages]
    )
    load = os.getloadavg()[0]
    return (
        f"{title} · N={n}\n"
        f"machine: {os.cpu_count()} cores · {cpu_model()} · {gib:.1f} GiB memory · {platform.machine()}"
        f" · load {load:.2f}\n"
        f"versions: {versions}"
    )


def print_header(title: str, n: object, packages: tuple[str, ...] = ("redis", "hiredis", "bullmq")) -> None:
    print(header(title, n, packages), flush=True)
