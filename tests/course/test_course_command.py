"""The course command's first screen (issue 22, item 3): one banner, Jupyter's log in a file.

It runs ``tools/course.sh`` as a learner would (on a free loopback port), reads
what it prints until the banner is whole, checks the log file, and stops it
by its PID: the server must then be gone.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
from nbformat.sign import NotebookNotary

from echomq_teach.nodes.host import free_port

ROOT = Path(__file__).resolve().parents[2]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def test_the_course_command_prints_one_banner_and_logs_the_rest(tmp_path: Path) -> None:
    port = free_port()
    # a Jupyter data folder of its own: the notebooks are trusted by this run, not by an earlier one
    data = tmp_path / "jupyter-data"
    proc = subprocess.Popen(
        ["bash", str(ROOT / "tools" / "course.sh"), f"--ServerApp.port={port}", "--ServerApp.port_retries=0"],
        cwd=ROOT, env={**os.environ, "JUPYTER_DATA_DIR": str(data)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 120
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "Stop:" in line:
                break
        shown = "".join(lines)
        m = re.search(rf"http://127\.0\.0\.1:{port}/lab\?token=([0-9a-f]+)", shown)
        assert m, shown
        assert f"ssh -N -L {port}:127.0.0.1:{port}" in shown and "Ctrl-C" in shown, shown
        # nothing of Jupyter's stock log on the first screen
        for stock in ("No web browser", "ServerApp]", "file://", "Serving notebooks"):
            assert stock not in shown, stock
        assert len(lines) <= 15, shown
        log = ROOT / ".course" / "jupyter.log"
        assert "ServerApp" in log.read_text(), "Jupyter's log is in .course/jupyter.log"
        ignored = subprocess.run(["git", "check-ignore", "-q", str(log)], cwd=ROOT)
        assert ignored.returncode == 0, ".course/ is git-ignored (the log holds the token)"
        # the course's notebooks are trusted, so they open showing the widgets they stored
        notary = NotebookNotary(data_dir=str(data))
        for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
            assert notary.check_signature(nbformat.read(path, as_version=4)), f"{path.name} is not trusted"
        # the URL it printed is the server's: the token opens the API
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={m.group(1)}", timeout=10) as r:
            assert r.status == 200
    finally:
        os.kill(proc.pid, signal.SIGTERM)  # the command's own PID: its trap stops JupyterLab
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the session this test started, and nothing else
            proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            break  # nothing listens on the port any more
        time.sleep(0.2)
    else:
        raise AssertionError("JupyterLab still answers after the course command was stopped")
