"""The reaper: removes a kernel's container nodes when that kernel dies, however it dies.

``container.py`` starts one per process, in a session of its own (so a kill of
the kernel's process group spares it), and writes to its stdin::

    + <container id> <folder>     a container node this process started
    - <container id>              stopped by the process itself: forget it

When the kernel dies, even by SIGKILL, the pipe's last write end closes and the
reaper reads end-of-file: it then force-removes every container still listed
and deletes its folder, and exits. A reaper that is itself killed leaves the
containers to ``container.sweep()``, which reads their owner label.
"""

from __future__ import annotations

import shutil
import signal
import sys


def main() -> int:
    # the kernel's Ctrl-C or a closing terminal must not end us before the kernel does
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    owned: dict[str, str] = {}
    for line in sys.stdin:
        op, _, rest = line.rstrip("\n").partition(" ")
        if op == "+":
            cid, _, folder = rest.partition(" ")
            owned[cid] = folder
        elif op == "-":
            owned.pop(rest, None)
    if not owned:
        return 0
    import docker

    client = docker.from_env(timeout=30)
    try:
        for cid, folder in owned.items():
            try:
                client.containers.get(cid).remove(force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                print(f"echomq reaper: could not remove {cid[:12]}: {exc}", file=sys.stderr)
            if folder:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
