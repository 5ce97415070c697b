"""No process the kit starts carries a node's password on its command line.

``ps`` reads ``/proc/PID/cmdline``, which every user of the machine may read; a process's
environment (``/proc/PID/environ``) only its own user may. So the kit hands a node's URL or
address to its children in their environment and a server its password in a 0600 file, and
``nodes.process`` refuses, before anything is forked, a command line that holds a password or a
key this process made or was given.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import wait_for

from echomq_teach.floor.process import DriverProcess
from echomq_teach.lab.run import Run
from echomq_teach.nodes.process import Child, ChildError, launcher, run_tool


def command_line(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def environment_is_private(pid: int) -> bool:
    return stat.S_IMODE(os.stat(f"/proc/{pid}/environ").st_mode) & 0o077 == 0


def test_a_command_line_with_a_password_is_refused_before_anything_runs(node, tmp_path):
    marker = tmp_path / "ran"
    touch = f"open({str(marker)!r}, 'w')"
    for argv in ([sys.executable, "-c", touch, node.url], [sys.executable, "-c", touch, f"--password={node.password}"]):
        for start in (lambda a: Child(a, log=None), run_tool):
            with pytest.raises(ChildError, match="ps shows to every user") as refused:
                start(argv)
            assert node.password not in str(refused.value)
    assert not marker.exists()  # nothing was forked
    # the same program with its address in the environment runs
    done = run_tool([sys.executable, "-c", touch], env={**os.environ, "ECHOMQ_URL": node.url})
    assert done.returncode == 0 and marker.exists()


def test_the_kits_children_carry_no_password_on_their_command_lines(node, queue, tmp_path):
    secrets = (node.password, quote(node.password, safe=""))
    with Run(node, queue, workers=2, lease_ms=5_000, work_ms=2, tick_ms=25, timeout=60) as run:
        try:
            run.produce(10)
            for worker in run.start():
                worker.wait_ready()
            assert run.wait_drained(30), run.sizes()
            # the floor's driver, left following the completions stream the workers wrote
            driver = DriverProcess(node.address, queue, tmp_path / "floor.sqlite3", "--follow", "--timeout", "30")
            try:
                driver.wait_for("driver on")
                live = [p for p in list(launcher.children) if p.poll() is None]
                lines = {p.pid: command_line(p.pid) for p in live}
                kinds = {k for k in ("valkey-server", "echomq_teach.lab.worker", "echomq_teach.floor")
                         if any(k in line for line in lines.values())}
                assert kinds == {"valkey-server", "echomq_teach.lab.worker", "echomq_teach.floor"}, lines
                for pid, line in lines.items():
                    assert not any(s in line for s in secrets), f"a password on the command line of {pid}: {line}"
                    assert environment_is_private(pid)
            finally:
                driver.stop()
        finally:
            run.stop()
    wait_for(lambda: driver.proc.poll() is not None, "the driver's exit")
