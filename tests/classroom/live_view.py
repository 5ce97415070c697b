"""The live view's process as the host sees it (the hub tests of tests/classroom/ share this).

The hub starts the service (``echomq_teach/hub/progress.py``) as its own child;
these helpers find it by its command line and the state folder in its
environment, and read what the kernel says of it.
"""

from __future__ import annotations

from pathlib import Path


def service_pid(state: Path) -> int:
    """The live view's process of the hub whose state folder is ``state``."""
    for p in Path("/proc").glob("[0-9]*"):
        try:
            if (b"echomq_teach.hub.progress" in (p / "cmdline").read_bytes()
                    and str(state).encode() in (p / "environ").read_bytes()):
                return int(p.name)
        except OSError:
            continue
    raise AssertionError(f"the live view of {state} is not running")


def status(pid: int) -> dict[str, str]:
    """``/proc/<pid>/status``, field by field."""
    return {k: v.strip() for k, _, v in (line.partition(":") for line in Path(f"/proc/{pid}/status").read_text()
                                         .splitlines())}


def peak_kb(pid: int) -> int:
    """The process's peak resident memory (VmHWM), in KiB."""
    return int(status(pid)["VmHWM"].split()[0])


def data_limit(pid: int) -> int:
    """The process's data-segment limit (RLIMIT_DATA, soft), in bytes."""
    line = [x for x in Path(f"/proc/{pid}/limits").read_text().splitlines() if x.startswith("Max data size")][0]
    return int(line.split()[3])
