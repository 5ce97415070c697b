"""A classroom on one machine: what each student costs in memory, and how many fit.

N students, each with a single-user Jupyter server of their own (``jupyter
lab`` on 127.0.0.1, a token, private JUPYTER_* folders, a copy of the course's
``00-start-here``) and a kernel that has run every code cell of that notebook
(which starts a node and, in its last cell, stops it) and then starts its own
node again, as 01 does first, and sends it a job. Then, for each student, the
PSS (proportional set size: a page shared by k processes counts 1/k to each,
so shared libraries are not counted N times) of the server, the kernel and the
node, from ``/proc/<pid>/smaps_rollup``, and how many such students this
machine's memory holds. The goal is 150 MB per student. Every process is
stopped by its PID at the end (the server by SIGTERM, then anything of its
tree still there by SIGKILL); every wait is bounded. A benchmark, not a test.

    .venv/bin/python bench/bench_classroom.py [N]      # N students, 1 to 8 (default 4)
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from machine import available_bytes, memory_bytes, print_header

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "00-start-here.ipynb"
#: after 00 (whose last cell stops its node): the node a course kernel holds from 01 on
NEXT = 'node = start_node()\nconn = node.connector()\njobs.enqueue(conn, "hello", "again")\nassert node.running'
GOAL_MB = 150.0
START_LIMIT_S = 180.0
CELL_LIMIT_S = 60.0
MB = 1024 * 1024


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Student:
    """One student's server (and, through it, the kernel and its node)."""

    name: str
    home: Path
    port: int
    token: str
    proc: subprocess.Popen[bytes]
    kernel_id: str = ""
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(self, method: str, path: str, body: object = None) -> object:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"token {self.token}", "Content-Type": "application/json"}
        req = urllib.request.Request(f"{self.base}{path}", data=data, method=method, headers=headers)
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
        return json.loads(raw) if raw else None


def start_server(name: str, work: Path) -> Student:
    home = work / name
    root = home / "notebooks"
    root.mkdir(parents=True)
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    env = dict(os.environ)
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR"):
        env[var] = str(home / var.lower())
    env["JUPYTERLAB_SETTINGS_DIR"] = str(home / "settings")
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(home / "workspaces")
    token, port = secrets.token_hex(16), free_port()
    env["JUPYTER_TOKEN"] = token  # not on the command line, which ps shows to every user of the machine
    log = open(home / "jupyter.log", "wb")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--allow-root", "--no-browser", "--ip", "127.0.0.1",
         "--port", str(port), f"--ServerApp.root_dir={root}",
         "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )
    return Student(name, home, port, token, proc)


def wait_ready(s: Student) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < START_LIMIT_S:
        if s.proc.poll() is not None:
            raise SystemExit(f"bench_classroom: {s.name}'s server exited: see {s.home / 'jupyter.log'}")
        try:
            s.api("GET", "/api/status")
            s.seconds["server"] = time.monotonic() - t0
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"bench_classroom: {s.name}'s server did not answer within {START_LIMIT_S:.0f} s")


async def run_notebook(s: Student, sources: list[str]) -> None:
    """Open a session on 00-start-here and run its code cells through the kernel's websocket, in order."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    t0 = time.monotonic()
    sess = s.api("POST", "/api/sessions", {"path": NOTEBOOK.name, "type": "notebook", "name": NOTEBOOK.name,
                                            "kernel": {"name": "python3"}})
    s.kernel_id = sess["kernel"]["id"]  # type: ignore[index]
    url = f"ws://127.0.0.1:{s.port}/api/kernels/{s.kernel_id}/channels"
    ws = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {s.token}"}))
    session = uuid.uuid4().hex
    try:
        for code in sources:
            msg_id = uuid.uuid4().hex
            ws.write_message(json.dumps({
                "header": {"msg_id": msg_id, "username": "bench", "session": session,
                           "msg_type": "execute_request", "version": "5.3"},
                "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                            "allow_stdin": False, "stop_on_error": True},
            }))
            while True:
                raw = await asyncio.wait_for(ws.read_message(), CELL_LIMIT_S)
                if raw is None:
                    raise SystemExit(f"bench_classroom: {s.name}'s kernel channel closed")
                msg = json.loads(raw)
                if msg.get("msg_type") == "execute_reply" and msg["parent_header"].get("msg_id") == msg_id:
                    if msg["content"]["status"] != "ok":
                        raise SystemExit(f"bench_classroom: a cell of 00 failed in {s.name}'s kernel: "
                                         f"{msg['content'].get('ename')}: {msg['content'].get('evalue')}")
                    break
    finally:
        ws.close()
    s.seconds["kernel + 00"] = time.monotonic() - t0


def children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            out.setdefault(ppid, []).append(int(d.name))
    return out


def tree(pid: int, kids: dict[int, list[int]]) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def pss(pid: int) -> int:
    """PSS in bytes from /proc/<pid>/smaps_rollup; 0 for a process already gone."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def memory(s: Student, kids: dict[int, list[int]]) -> dict[str, int]:
    """The student's tree by part: the server, the kernel (a python child of it), the node, anything else."""
    parts = {"server": pss(s.proc.pid), "kernel": 0, "node": 0, "other": 0}
    for pid in tree(s.proc.pid, kids)[1:]:
        name = comm(pid)
        key = "node" if name.startswith("valkey") else "kernel" if name.startswith("python") else "other"
        parts[key] += pss(pid)
    return parts


def stop(s: Student) -> None:
    """SIGTERM to the server's PID (it shuts its kernels down), then SIGKILL to whatever of its tree is left."""
    left = tree(s.proc.pid, children())
    if s.proc.poll() is None:
        s.proc.send_signal(signal.SIGTERM)
        try:
            s.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            s.proc.kill()
            s.proc.wait()
    deadline = time.monotonic() + 10
    for pid in left[1:]:
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if Path(f"/proc/{pid}").exists():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def main(argv: list[str]) -> int:
    n = int(argv[1]) if len(argv) > 1 else 4
    if not 1 <= n <= 8:
        print("N must be 1 to 8 students: this bench starts real servers and kernels", file=sys.stderr)
        return 2
    cells = [c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]
    sources = [*cells, NEXT]
    print_header("The Queue · classroom bench: N students on one machine, PSS per student", f"{n} students",
                 packages=("redis", "jupyterlab", "ipykernel"))
    free_before = available_bytes()
    work = Path(tempfile.mkdtemp(prefix="bench-classroom-"))
    students: list[Student] = []
    try:
        for i in range(n):
            students.append(start_server(f"student{i + 1}", work))
        for s in students:
            wait_ready(s)
        for s in students:  # one after another: each kernel's start is what a student waits for
            asyncio.run(run_notebook(s, sources))
        time.sleep(1.0)  # let the kernels settle after their last cell
        kids = children()
        rows = [(s, memory(s, kids)) for s in students]
    finally:
        for s in students:
            stop(s)
        shutil.rmtree(work, ignore_errors=True)

    print(f"each: jupyter lab (single-user server) + a python3 kernel that ran the {len(cells)} code cells of "
          f"{NOTEBOOK.stem}, then started its own valkey-server again (as 01 does)")
    print(f"{'student':<10}{'server':>9}{'kernel':>9}{'node':>9}{'other':>8}{'total':>9}   server up, kernel + 00")
    totals = []
    for s, m in rows:
        total = sum(m.values())
        totals.append(total)
        print(f"{s.name:<10}" + "".join(f"{m[k] / MB:>8.1f}M" for k in ("server", "kernel", "node"))
              + f"{m['other'] / MB:>7.1f}M{total / MB:>8.1f}M   "
              + f"{s.seconds.get('server', 0):.1f} s, {s.seconds.get('kernel + 00', 0):.1f} s")
    per = statistics.mean(totals)
    print(f"per student (mean PSS): {per / MB:.1f} MB · goal {GOAL_MB:.0f} MB ({per / MB / GOAL_MB:.2f} of it)")
    print(f"students that fit: {int(memory_bytes() // per)} in this machine's {memory_bytes() / 2**30:.1f} GiB, "
          f"{int(free_before // per)} in the {free_before / 2**30:.1f} GiB available before the bench")
    print("PSS: a page shared by k processes counts 1/k to each, so the libraries N students share are not counted "
          "N times")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
