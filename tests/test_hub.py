"""JupyterHub smoke test (mark ``hub``): two students, two servers, two embedded nodes.

The hub runs ``docker/jupyterhub_config.py`` (the classroom's own config) with
the dummy authenticator, SimpleLocalProcessSpawner and npm's
configurable-http-proxy, all on 127.0.0.1. Each student logs in through the
login form, gets a server, and runs ``notebooks/00-start-here.ipynb`` (or the
stand-in in tests/hub/ while that does not exist) cell by cell in a kernel of
that server, over the hub's proxy: the REST API makes the session, the kernel
websocket runs the cells. Everything started is stopped by PID at the end.
Needs: ``bash tools/install-hub.sh``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import terminate

from echomq_teach.node import free_port

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "docker" / "jupyterhub_config.py"
START_HERE = ROOT / "notebooks" / "00-start-here.ipynb"
STAND_IN = ROOT / "tests" / "hub" / "stand-in.ipynb"
USERS = ("alice", "bob")
CELL_TIMEOUT_S = 60

pytestmark = [pytest.mark.hub, pytest.mark.timeout(180)]

requests = pytest.importorskip("requests")
websocket = pytest.importorskip("websocket", reason="websocket-client is not installed")


def _chp() -> str | None:
    for cand in (
        os.environ.get("ECHOMQ_CHP"),
        shutil.which("configurable-http-proxy"),
        str(ROOT / "build" / "hub-proxy" / "node_modules" / ".bin" / "configurable-http-proxy"),
    ):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def _hub_bin() -> Path:
    return Path(sys.executable).with_name("jupyterhub")


def _missing() -> str | None:
    if not _hub_bin().exists():
        return "jupyterhub is not installed in this venv (bash tools/install-hub.sh)"
    if _chp() is None:
        return "configurable-http-proxy is not installed (bash tools/install-hub.sh)"
    if not shutil.which("valkey-server"):
        return "valkey-server is not installed (bash tools/setup-system.sh)"
    return None


# -- processes, by PID -------------------------------------------------------------------------------------
def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its parent counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def end(pids: list[int]) -> None:
    """SIGTERM, then SIGKILL, to processes this test started (its hub and their descendants)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in pids:
            if alive(p):
                try:
                    os.kill(p, sig)
                except ProcessLookupError:
                    pass
        if not wait_gone(pids, 5):
            return


# -- the hub ---------------------------------------------------------------------------------------------------
@dataclass
class Hub:
    proc: subprocess.Popen[bytes]
    state: Path
    port: int
    token: str
    log: Path
    started: list[int] = field(default_factory=list)  # every PID seen, for the cleanup

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(self, method: str, path: str, token: str | None = None, **kw: object) -> requests.Response:
        headers = {"Authorization": f"token {token or self.token}"}
        return requests.request(method, f"{self.base}{path}", headers=headers, timeout=30, **kw)

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no hub log)"


@pytest.fixture(scope="module")
def hub() -> Iterator[Hub]:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    state = Path(tempfile.mkdtemp(prefix="emq-hub-"))
    course = state / "course"
    course.mkdir()
    shutil.copy2(START_HERE if START_HERE.exists() else STAND_IN, course)
    port, token = free_port(), uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECHOMQ_", "JUPYTER", "CONFIGPROXY"))}
    env.update(
        ECHOMQ_HUB_DIR=str(state / "hub"),
        ECHOMQ_HUB_PORT=str(port),
        ECHOMQ_HUB_API_PORT=str(free_port()),
        ECHOMQ_PROXY_API_PORT=str(free_port()),
        ECHOMQ_HUB_AUTH="dummy",
        ECHOMQ_HUB_USERS=",".join(USERS),
        ECHOMQ_HUB_API_TOKEN=token,
        ECHOMQ_COURSE_DIR=str(course),
        ECHOMQ_CHP=_chp() or "",
    )
    log = state / "hub.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(_hub_bin()), "-f", str(CONFIG)],
            cwd=state,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    h = Hub(proc, state, port, token, log, started=[proc.pid])
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyterhub exited with {proc.returncode}:\n{h.log_tail()}")
            try:
                if requests.get(f"{h.base}/hub/api/", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"jupyterhub did not answer within 30 s:\n{h.log_tail()}")
            time.sleep(0.1)
        proxy_pid = state / "hub" / "proxy.pid"
        if proxy_pid.exists():
            h.started.append(int(proxy_pid.read_text().strip()))
        yield h
    finally:
        # the hub stops its proxy and the servers it spawned (cleanup_servers); we check by PID
        terminate(proc)
        left = wait_gone(h.started, 10)
        end(left)  # anything the hub did not stop, we do
        shutil.rmtree(state, ignore_errors=True)
        assert not left, f"still running after the hub stopped: {left}"


# -- a student ---------------------------------------------------------------------------------------------
def login(hub: Hub, name: str) -> requests.Session:
    """The login form, as a browser sends it (the dummy authenticator takes any password)."""
    s = requests.Session()
    s.get(f"{hub.base}/hub/login", timeout=10)
    xsrf = s.cookies.get("_xsrf")
    r = s.post(
        f"{hub.base}/hub/login",
        data={"username": name, "password": "any", "_xsrf": xsrf},
        allow_redirects=False,
        timeout=30,
    )
    assert r.status_code == 302, (r.status_code, r.text[:300])
    return s


def start_server(hub: Hub, name: str) -> None:
    r = hub.api("POST", f"/hub/api/users/{name}/server")
    assert r.status_code in (201, 202), (r.status_code, r.text)


def wait_ready(hub: Hub, name: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = hub.api("GET", f"/hub/api/users/{name}").json().get("servers", {}).get("")
        if server and server.get("ready"):
            return
        time.sleep(0.2)
    pytest.fail(f"{name}'s server was not ready within {timeout:.0f} s:\n{hub.log_tail()}")


def user_token(hub: Hub, name: str) -> str:
    r = hub.api("POST", f"/hub/api/users/{name}/tokens", json={"note": "hub smoke test", "expires_in": 600})
    assert r.status_code == 201, (r.status_code, r.text)
    return r.json()["token"]


class Kernel:
    """One kernel of a student's server, driven over its websocket through the hub's proxy."""

    def __init__(self, hub: Hub, name: str, token: str, notebook: str) -> None:
        self.name, self.token, self.hub = name, token, hub
        r = hub.api(
            "POST",
            f"/user/{name}/api/sessions",
            token=token,
            json={"path": notebook, "type": "notebook", "name": notebook, "kernel": {"name": "python3"}},
        )
        assert r.status_code == 201, (r.status_code, r.text[:500])
        self.session = r.json()
        kid = self.session["kernel"]["id"]
        self.ws = websocket.create_connection(
            f"ws://127.0.0.1:{hub.port}/user/{name}/api/kernels/{kid}/channels",
            header=[f"Authorization: token {token}"],
            timeout=CELL_TIMEOUT_S,
        )
        self.sid = uuid.uuid4().hex

    def run(self, code: str, quiet: bool = False) -> str:
        """Execute ``code``; answers its printed output, or fails with the kernel's traceback."""
        msg_id = uuid.uuid4().hex
        self.ws.send(
            json.dumps(
                {
                    "header": {
                        "msg_id": msg_id,
                        "username": self.name,
                        "session": self.sid,
                        "msg_type": "execute_request",
                        "version": "5.3",
                    },
                    "parent_header": {},
                    "metadata": {},
                    "content": {
                        "code": code,
                        "silent": False,
                        "store_history": not quiet,
                        "user_expressions": {},
                        "allow_stdin": False,
                        "stop_on_error": True,
                    },
                    "channel": "shell",
                    "buffers": [],
                }
            )
        )
        out: list[str] = []
        error: dict | None = None
        replied = idle = False
        deadline = time.monotonic() + CELL_TIMEOUT_S
        while not (replied and idle):
            if time.monotonic() > deadline:
                pytest.fail(f"{self.name}: a cell ran past {CELL_TIMEOUT_S} s:\n{code[:300]}")
            m = json.loads(self.ws.recv())
            if m.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = m["header"]["msg_type"]
            if kind == "stream":
                out.append(m["content"]["text"])
            elif kind in ("execute_result", "display_data"):
                out.append(m["content"]["data"].get("text/plain", "") + "\n")
            elif kind == "error":
                error = m["content"]
            elif kind == "execute_reply":
                replied = True
                if m["content"]["status"] == "error" and error is None:
                    error = m["content"]
            elif kind == "status" and m["content"]["execution_state"] == "idle":
                idle = True
        if error is not None:
            tb = "\n".join(error.get("traceback", []))
            pytest.fail(f"{self.name}: cell failed: {error.get('ename')}: {error.get('evalue')}\n{code[:500]}\n{tb}")
        return "".join(out)

    def close(self) -> None:
        self.ws.close()
        self.hub.api("DELETE", f"/user/{self.name}/api/sessions/{self.session['id']}", token=self.token)


PROBE = """
import json as _j, os as _o
from echomq_teach import node as _n
print("PROBE" + _j.dumps({"kernel": _o.getpid(), "server": _o.getppid(),
    "nodes": sorted([x.pid, x.port] for x in list(_n._live) if getattr(x, "pid", None))}))
"""


def run_notebook(kernel: Kernel, path: Path) -> dict:
    """Every code cell in order; after each, a quiet probe notes the kernel's own nodes."""
    nb = json.loads(path.read_text())
    seen: dict = {"nodes": set(), "cells": 0}
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        kernel.run("".join(cell["source"]))
        seen["cells"] += 1
        probe = json.loads(kernel.run(PROBE, quiet=True).split("PROBE", 1)[1])
        seen["kernel"], seen["server"] = probe["kernel"], probe["server"]
        seen["nodes"].update((pid, port) for pid, port in probe["nodes"])
    return seen


# -- the smoke test -------------------------------------------------------------------------------------------
def test_two_students_each_run_the_course_on_their_own_node(hub: Hub) -> None:
    t0 = time.monotonic()
    notebook = START_HERE if START_HERE.exists() else STAND_IN

    # the login form: the roster's students get in, anyone else is turned away
    sessions = {name: login(hub, name) for name in USERS}
    s = requests.Session()
    s.get(f"{hub.base}/hub/login", timeout=10)
    r = s.post(
        f"{hub.base}/hub/login",
        data={"username": "mallory", "password": "any", "_xsrf": s.cookies.get("_xsrf")},
        allow_redirects=False,
        timeout=30,
    )
    assert r.status_code == 403

    for name in USERS:  # both spawns in flight at once
        start_server(hub, name)
    for name in USERS:
        wait_ready(hub, name)
    t_ready = time.monotonic()

    results = {}
    for name in USERS:
        token = user_token(hub, name)
        # the other student's token does not open this server
        other = next(u for u in USERS if u != name)
        assert hub.api("GET", f"/user/{other}/api/status", token=token).status_code == 403
        kernel = Kernel(hub, name, token, notebook.name)
        try:
            results[name] = run_notebook(kernel, notebook)
        finally:
            kernel.close()
        seen = results[name]
        hub.started += [seen["server"], seen["kernel"], *[pid for pid, _ in seen["nodes"]]]
        sessions[name].close()

    a, b = (results[u] for u in USERS)
    assert a["cells"] == b["cells"] > 0
    assert a["nodes"] and b["nodes"], "each kernel started a node of its own"
    assert not (a["nodes"] & b["nodes"]), "the two students never share a node"
    assert a["server"] != b["server"] and a["kernel"] != b["kernel"]
    for seen in (a, b):
        home = hub.state / "hub" / "home"
        assert Path(f"/proc/{seen['server']}/cwd").resolve().parent == home.resolve()
        for pid, _ in seen["nodes"]:
            if alive(pid):  # a node the notebook left running is its kernel's child
                assert parent_of(pid) == seen["kernel"]
    ran = time.monotonic() - t_ready
    print(f"hub smoke: servers ready in {t_ready - t0:.1f} s, {notebook.name} run twice in {ran:.1f} s")
