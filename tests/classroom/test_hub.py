"""The classroom's JupyterHub, in its production configuration (mark ``hub``).

The hub runs ``docker/jupyterhub_config.py`` as it is deployed: as root, the
classroom authenticator (the native authenticator: a password of each
student's own, sign-ups approved by the instructor, the instructor an admin
made from a root-only password file), one container per student from the
offline course image (DockerSpawner on the private engine the suite starts),
configurable-http-proxy, all on 127.0.0.1, and a shared scripted node with
one ACL user per student provisioned into a root-only credentials file.

Two students sign up and log in with their own passwords, the instructor
authorizes them, alice runs ``notebooks/00-start-here.ipynb`` cell by cell in a
kernel of her own server (over the kernel websocket, through the proxy: in CI,
00's one run beside nbval), bob's kernel enqueues a job of his own, and then,
from inside alice's kernel, the test proves that bob's files, credentials,
environment, server, node and keys are out of reach; alice
cannot log in as bob. The instructor's live view then shows what the two
kernels' checks reported, and the roster's third name as never reported, in
Chromium. Everything started is stopped by PID (and container id)
at the end. Needs: root, ``bash tools/install-hub.sh``, a Docker engine at
DOCKER_HOST with the course image built (tools/test.sh does all three).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import secrets
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

import attacks
import pytest
import redis
import yaml
from conftest import terminate

from echomq_teach.classroom import compose, credentials, provision
from echomq_teach.classroom.holders import holders
from echomq_teach.connector import address_from_url, make_client
from echomq_teach.course import exercises, registry
from echomq_teach.nodes import container, valkey
from echomq_teach.nodes.host import free_port

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "docker" / "jupyterhub_config.py"
COMPOSE = ROOT / "docker" / "compose.yaml"
NODE_IMAGE = os.environ.get("ECHOMQ_NODE_IMAGE") or "echomq-node:local"
#: the shared node's limits here: small, so the attacks reach them quickly
MAXMEMORY, MAXCLIENTS = "64mb", 64
START_HERE = ROOT / "notebooks" / "00-start-here.ipynb"
IMAGE = os.environ.get("ECHOMQ_COURSE_IMAGE") or "echomq-course:local"
USERS = ("alice", "bob")
#: on the roster, never signed up: the live view shows a row for her all the same
ROSTER_ONLY = "carol"
ADMIN = "instructor"
CELL_TIMEOUT_S = 90

pytestmark = [pytest.mark.hub, pytest.mark.container, pytest.mark.timeout(300)]

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
    if os.getuid() != 0:
        return "the classroom hub runs as root (it starts a container per student)"
    if not _hub_bin().exists():
        return "jupyterhub is not installed in this venv (bash tools/install-hub.sh)"
    for mod in ("dockerspawner", "nativeauthenticator"):
        try:
            __import__(mod)
        except ImportError:
            return f"{mod} is not installed in this venv (bash tools/install-hub.sh)"
    if _chp() is None:
        return "configurable-http-proxy is not installed (bash tools/install-hub.sh)"
    try:
        client = container.engine()
    except Exception as exc:  # noqa: BLE001
        return f"no Docker engine answers at {os.environ.get('DOCKER_HOST', 'the default socket')} ({exc})"
    try:
        container.image_info(client, IMAGE)
        container.image_info(client, NODE_IMAGE)
    except Exception as exc:  # noqa: BLE001
        return f"an image is not built ({exc}; bash docker/build-offline.sh, bash docker/build-course-offline.sh)"
    finally:
        client.close()
    return None


# -- processes, by PID -------------------------------------------------------------------------------------
def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its parent counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def end(pids: list[int]) -> None:
    """SIGTERM, then SIGKILL, to processes this test started (its hub and the proxy)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in pids:
            if alive(p):
                try:
                    os.kill(p, sig)
                except ProcessLookupError:
                    pass
        if not wait_gone(pids, 5):
            return


# -- the classroom -----------------------------------------------------------------------------------------------
@dataclass
class Hub:
    proc: subprocess.Popen[bytes]
    state: Path
    port: int
    token: str
    log: Path
    node_id: str  # the shared node's container, started as docker/compose.yaml describes it
    admin_url: str  # the instructor's: the node's Unix socket on the host
    admin_password: str
    creds_path: Path
    started: list[int] = field(default_factory=list)  # every PID seen, for the cleanup
    containers: dict[str, str] = field(default_factory=dict)  # student -> container id

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(self, method: str, path: str, token: str | None = None, **kw: object) -> requests.Response:
        headers = {"Authorization": f"token {token or self.token}"}
        return requests.request(method, f"{self.base}{path}", headers=headers, timeout=30, **kw)

    def admin(self) -> redis.Redis:
        return make_client(address_from_url(self.admin_url))

    def node_state(self) -> dict:
        client = container.engine()
        try:
            attrs = client.containers.get(self.node_id).attrs
        finally:
            client.close()
        return {"started": attrs["State"]["StartedAt"], "restarts": attrs["RestartCount"],
                "oom": attrs["State"]["OOMKilled"], "running": attrs["State"]["Running"], "host": attrs["HostConfig"]}

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no hub log)"


def _our_containers() -> list:
    client = container.engine()
    try:
        return [ct for ct in client.containers.list(all=True) if ct.name in {f"echomq-{u}" for u in USERS}]
    finally:
        client.close()


def _remove_volumes() -> None:
    client = container.engine()
    try:
        for u in USERS:
            try:
                client.volumes.get(f"echomq-{u}").remove(force=True)
            except Exception:  # noqa: BLE001 - never made, or gone
                pass
    finally:
        client.close()


def _interpolate(value: object, env: dict[str, str]) -> object:
    """compose's ``${VAR}``, ``${VAR:?msg}`` and ``${VAR:-default}``, from ``env``."""
    if isinstance(value, str):
        def one(m: re.Match) -> str:
            name, op, rest = m.group(1), m.group(2) or "", m.group(3) or ""
            if name in env:
                return env[name]
            if op == ":-":
                return rest
            raise KeyError(f"{name} is not set ({rest})")

        return re.sub(r"\$\{([A-Z_]+)(:\?|:-)?([^}]*)\}", one, value)
    if isinstance(value, list):
        return [_interpolate(v, env) for v in value]
    if isinstance(value, dict):
        return {k: _interpolate(v, env) for k, v in value.items()}
    return value


def compose_node(env: dict[str, str], name: str) -> dict:
    """The docker SDK's ``run`` arguments for compose.yaml's scripted ``node`` service, as compose reads it."""
    import docker

    svc = _interpolate(yaml.safe_load(COMPOSE.read_text())["services"]["node"], env)
    assert isinstance(svc, dict)
    return {
        "image": svc["image"],
        "name": name,
        "command": svc["command"],
        "network_mode": svc["network_mode"],
        "user": svc["user"],
        "volumes": svc["volumes"],
        "restart_policy": {"Name": svc["restart"]},
        "read_only": svc["read_only"],
        "cap_drop": svc["cap_drop"],
        "security_opt": svc["security_opt"],
        "mem_limit": int(svc["mem_limit"]),
        "memswap_limit": int(svc["memswap_limit"]),
        "ulimits": [docker.types.Ulimit(name=k, soft=int(v), hard=int(v)) for k, v in svc["ulimits"].items()],
        "log_config": docker.types.LogConfig(type=svc["logging"]["driver"], config=svc["logging"]["options"]),
        "detach": True,
    }


def start_shared_node(room: Path, name: str) -> tuple[str, str]:
    """``classroom init`` and the compose ``node`` service; answers its container id and the admin URL."""
    admin_env = compose.init_folder(room, maxmemory=MAXMEMORY, maxclients=MAXCLIENTS)
    env = credentials.read_env_file(room / ".env")
    client = container.engine()
    try:
        ct = client.containers.run(**compose_node(env, name))
    finally:
        client.close()
    url = admin_env["ECHOMQ_ADMIN_URL"]
    deadline = time.monotonic() + 30
    while True:
        try:
            c = make_client(address_from_url(url))
            c.ping()
            c.close()
            return ct.id, url
        except (redis.exceptions.ConnectionError, FileNotFoundError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def remove_container(cid: str) -> None:
    client = container.engine()
    try:
        client.containers.get(cid).remove(force=True)
    except Exception:  # noqa: BLE001 - already gone
        pass
    finally:
        client.close()


@pytest.fixture(scope="module")
def hub() -> Iterator[Hub]:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    if _our_containers():
        pytest.fail(f"containers named echomq-{USERS} exist already in this engine: not ours to remove")
    _remove_volumes()  # a previous run's volumes, in this suite's own engine
    state = Path(tempfile.mkdtemp(prefix="emq-hub-"))  # 0700, root's
    node_id, admin_url = start_shared_node(state / "room", f"emq-hub-node-{uuid.uuid4().hex[:8]}")
    admin = make_client(address_from_url(admin_url))
    roster = state / "roster.txt"
    roster.write_text("\n".join([*USERS, ROSTER_ONLY]) + "\n")
    creds = state / "credentials.json"
    credentials.write_credentials(creds, provision.provision(admin, roster))
    admin_password = secrets.token_urlsafe(12)
    credentials.write_secret(state / "instructor.password", admin_password + "\n")
    port, token = free_port(), uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECHOMQ_", "JUPYTER", "CONFIGPROXY"))}
    env.update(
        ECHOMQ_HUB_DIR=str(state / "hub"),
        ECHOMQ_HUB_PORT=str(port),
        ECHOMQ_HUB_API_PORT=str(free_port()),
        ECHOMQ_PROXY_API_PORT=str(free_port()),
        ECHOMQ_PROGRESS_PORT=str(free_port()),  # the live view (echomq_teach/hub/progress.py)
        ECHOMQ_CLASSROOM_ROSTER=str(roster),
        ECHOMQ_HUB_ADMIN_PASSWORD_FILE=str(state / "instructor.password"),
        ECHOMQ_CLASSROOM_CREDENTIALS=str(creds),
        ECHOMQ_CLASSROOM_SOCKETS=str(state / "room" / "node" / compose.SOCKET_DIR),
        ECHOMQ_COURSE_IMAGE=IMAGE,
        ECHOMQ_HUB_API_TOKEN=token,
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
    h = Hub(proc, state, port, token, log, node_id, admin_url, admin_password, creds, started=[proc.pid])
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyterhub exited with {proc.returncode}:\n{h.log_tail()}")
            try:
                if requests.get(f"{h.base}/hub/api/", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"jupyterhub did not answer within 60 s:\n{h.log_tail()}")
            time.sleep(0.1)
        proxy_pid = state / "hub" / "proxy.pid"
        if proxy_pid.exists():
            h.started.append(int(proxy_pid.read_text().strip()))
        yield h
    finally:
        # the hub stops its proxy and the containers it spawned (cleanup_servers); we check by PID and id
        terminate(proc)
        left = wait_gone(h.started, 10)
        end(left)  # anything the hub did not stop, we do
        leftover = _our_containers()
        for ct in leftover:
            ct.remove(force=True)
        _remove_volumes()
        admin.close()
        remove_container(node_id)
        shutil.rmtree(state, ignore_errors=True)
        assert not left, f"still running after the hub stopped: {left}"
        assert not leftover, f"containers left after the hub stopped: {[ct.name for ct in leftover]}"


# -- the login form -------------------------------------------------------------------------------------
def _form(s: requests.Session, hub: Hub, path: str, data: dict) -> requests.Response:
    s.get(f"{hub.base}/hub/{path}", timeout=10)
    return s.post(
        f"{hub.base}/hub/{path}",
        data={**data, "_xsrf": s.cookies.get("_xsrf")},
        allow_redirects=False,
        timeout=30,
    )


def signup(hub: Hub, name: str, password: str) -> str:
    r = _form(
        requests.Session(),
        hub,
        "signup",
        {"username": name, "signup_password": password, "signup_password_confirmation": password},
    )
    assert r.status_code == 200, (r.status_code, r.text[:300])
    return r.text


def login(hub: Hub, name: str, password: str) -> requests.Session | None:
    """The login form, as a browser sends it: a session on success, None when refused."""
    s = requests.Session()
    r = _form(s, hub, "login", {"username": name, "password": password})
    if r.status_code == 302 and "/hub/login" not in r.headers.get("Location", ""):
        return s
    assert r.status_code in (200, 403), (r.status_code, r.text[:300], hub.log_tail(80))
    return None


def start_server(hub: Hub, name: str) -> None:
    r = hub.api("POST", f"/hub/api/users/{name}/server")
    assert r.status_code in (201, 202), (r.status_code, r.text, hub.log_tail(60))


def wait_ready(hub: Hub, name: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = hub.api("GET", f"/hub/api/users/{name}").json().get("servers", {}).get("")
        if server and server.get("ready"):
            return
        time.sleep(0.2)
    pytest.fail(f"{name}'s server was not ready within {timeout:.0f} s:\n{hub.log_tail()}")


def user_token(hub: Hub, name: str) -> str:
    r = hub.api("POST", f"/hub/api/users/{name}/tokens", json={"note": "hub test", "expires_in": 600})
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
        header = {
            "msg_id": msg_id,
            "username": self.name,
            "session": self.sid,
            "msg_type": "execute_request",
            "version": "5.3",
        }
        content = {
            "code": code,
            "silent": False,
            "store_history": not quiet,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        self.ws.send(
            json.dumps(
                {
                    "header": header,
                    "parent_header": {},
                    "metadata": {},
                    "content": content,
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

    def json(self, code: str) -> dict:
        """Run ``code``, which prints ``OUT`` + one JSON document; answers the document."""
        return json.loads(self.run(code, quiet=True).split("OUT", 1)[1])

    def close(self) -> None:
        self.ws.close()
        self.hub.api("DELETE", f"/user/{self.name}/api/sessions/{self.session['id']}", token=self.token)


def run_notebook(kernel: Kernel, path: Path) -> int:
    """Every code cell of the notebook, in order; answers how many ran."""
    nb = json.loads(path.read_text())
    n = 0
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            kernel.run("".join(cell["source"]))
            n += 1
    return n


# what alice's kernel finds when it reaches for bob's things; every probe answers what happened
PROBE = """
import glob as _g, json as _j, os as _o, socket as _s, urllib.request as _u, urllib.error as _ue
import redis as _r
from echomq_teach.connector import address_from_url as _a, make_client as _m
_args = _j.loads(ARGS)
out = {"me": _o.environ.get("ECHOMQ_NAMESPACE"), "url_user": _a(_o.environ["ECHOMQ_URL"]).get("username"),
       "uid": _o.getuid()}
# bob's credentials and environment: nowhere in this container's environment, files or processes
out["env_mentions_other"] = [k for k, v in _o.environ.items() if _args["other"] in v]
out["proc_environ_mentions_other"] = []
for p in _g.glob("/proc/[0-9]*/environ"):
    try:
        if _args["other_secret"].encode() in open(p, "rb").read():
            out["proc_environ_mentions_other"].append(p)
    except OSError:
        pass
out["pids_seen"] = len(_g.glob("/proc/[0-9]*"))
out["host_paths"] = {}
for path in _args["host_paths"]:
    try:
        open(path).read()
        out["host_paths"][path] = "read"
    except OSError as exc:
        out["host_paths"][path] = type(exc).__name__
out["docker_socket"] = any(_o.path.exists(p) for p in ("/var/run/docker.sock", _args["docker_socket"]))
# bob's files: his volume is not mounted here; this home is alice's own
out["home"] = sorted(_o.listdir("/home/learner"))
_mounts = open("/proc/self/mountinfo").read()
out["mounts_other"] = _args["other"] in _mounts
out["mounts_own"] = "echomq-" + out["me"] in _mounts
# bob's keys on the shared node: every key of his, by name, refused
c = _m(_a(_o.environ["ECHOMQ_URL"]))
out["keys"] = {}
for key in _args["other_keys"]:
    try:
        c.execute_command("TYPE", key)
        out["keys"][key] = "read"
    except _r.exceptions.NoPermissionError:
        out["keys"][key] = "NOPERM"
out["own_write"] = c.set(f"emq:{{{out['me']}.probe}}:x", "1")
# bob's own embedded node: alice reaches its port (the host's loopback) but has no password
try:
    _m({"host": "127.0.0.1", "port": _args["other_node_port"]}).ping()
    out["other_node"] = "answered"
except _r.exceptions.AuthenticationError:
    out["other_node"] = "AuthenticationError"
except _r.exceptions.ConnectionError as exc:
    out["other_node"] = "ConnectionError: " + str(exc)[:80]
# bob's server, with alice's own hub token
req = _u.Request(_args["other_server"], headers={"Authorization": "token " + _o.environ["JUPYTERHUB_API_TOKEN"]})
try:
    out["other_server"] = _u.urlopen(req, timeout=10).status
except _ue.HTTPError as exc:
    out["other_server"] = exc.code
print("OUT" + _j.dumps(out))
"""

# 00-start-here stops the node its kernel started; bob starts one more, his own, to be reached for
BOBS_JOB = """
from echomq_teach import jobs, start_node
jobs.enqueue(start_node().connector(), "orders", "bob's")
"""

NODE_PORTS = """
import json as _j
from echomq_teach import start_node as _start
_mine = _start(provider="local")
print("OUT" + _j.dumps({"ports": [_mine.port]}))
"""


# -- the test -----------------------------------------------------------------------------------------------
def test_two_students_each_in_a_container_of_their_own(hub: Hub) -> None:
    t0 = time.monotonic()
    passwords = {u: secrets.token_urlsafe(12) for u in USERS}

    # sign-ups: roster names only; nobody gets in before the instructor authorizes them
    for name in USERS:
        signup(hub, name, passwords[name])
    signup(hub, "mallory", "mallory-password-1")
    assert login(hub, "mallory", "mallory-password-1") is None, "not on the roster"
    assert login(hub, "alice", passwords["alice"]) is None, "not authorized yet"
    # the instructor's account came from the password file: a sign-up as the instructor is refused
    assert "already in use" in signup(hub, ADMIN, "taken-over-pw-1")
    teacher = login(hub, ADMIN, hub.admin_password)
    assert teacher is not None, f"the instructor could not log in:\n{hub.log_tail()}"
    for name in USERS:  # each visit of /hub/authorize/<name> toggles that sign-up's authorization
        r = teacher.get(f"{hub.base}/hub/authorize/{name}", timeout=30, allow_redirects=False)
        assert r.status_code in (200, 302), (r.status_code, r.text[:300])
    # each student logs in with their own password, and only with it
    sessions = {name: login(hub, name, passwords[name]) for name in USERS}
    assert all(sessions.values()), f"a student could not log in:\n{hub.log_tail()}"
    r = sessions["alice"].get(f"{hub.base}/hub/authorize/bob", timeout=30, allow_redirects=False)
    assert r.status_code == 403, "only the instructor authorizes sign-ups"
    assert login(hub, "bob", passwords["alice"]) is None, "alice's password does not open bob's account"
    assert login(hub, "bob", "not-bobs-password") is None
    assert login(hub, "alice", passwords["bob"]) is None

    t_accounts = time.monotonic()
    for name in USERS:  # both spawns in flight at once
        start_server(hub, name)
    for name in USERS:
        wait_ready(hub, name)
    t_ready = time.monotonic()
    for ct in _our_containers():
        hub.containers[ct.name.removeprefix("echomq-")] = ct.id
        attrs = ct.attrs
        assert attrs["HostConfig"]["NetworkMode"] == "host" and attrs["HostConfig"]["Memory"] > 0
        assert "ALL" in (attrs["HostConfig"]["CapDrop"] or [])
    assert set(hub.containers) == set(USERS)

    kernels: dict[str, Kernel] = {}
    tokens = {name: user_token(hub, name) for name in USERS}
    try:
        # alice runs the course's first notebook (00's one run beside nbval in CI); bob's kernel writes a job of
        # his own on the shared node, whose keys alice then reaches for
        kernels["alice"] = Kernel(hub, "alice", tokens["alice"], START_HERE.name)
        cells = run_notebook(kernels["alice"], START_HERE)
        kernels["bob"] = Kernel(hub, "bob", tokens["bob"], START_HERE.name)
        kernels["bob"].run(BOBS_JOB)
        t_ran = time.monotonic()

        # bob's things, as the host sees them
        bob_env = credentials.read_credentials(hub.creds_path)["bob"]
        bob_secret = address_from_url(bob_env["ECHOMQ_URL"])["password"]
        admin = hub.admin()
        bob_keys = sorted(admin.scan_iter("emq:{bob.*}:*"))
        admin.close()
        assert bob_keys, "bob's kernel wrote keys on the shared node"
        bob_node = kernels["bob"].json(NODE_PORTS)
        assert bob_node["ports"], "bob's kernel started a node of its own"
        other_server = hub.api("GET", "/hub/api/users/bob").json()["servers"][""]["url"]
        args = {
            "other": "bob",
            "other_secret": bob_secret,
            "other_keys": bob_keys,
            "other_node_port": bob_node["ports"][0],
            "other_server": f"http://127.0.0.1:{hub.port}{other_server}api/status",
            "host_paths": [
                str(hub.creds_path),
                str(hub.state / "instructor.password"),
                str(hub.state / "hub" / "jupyterhub_cookie_secret"),
                str(hub.state / "hub" / "jupyterhub.sqlite"),
            ],
            "docker_socket": os.environ.get("DOCKER_HOST", "").removeprefix("unix://"),
        }
        seen = kernels["alice"].json(PROBE.replace("ARGS", repr(json.dumps(args))))
    finally:
        for k in kernels.values():
            k.close()
    for s in sessions.values():
        s.close()
    teacher.close()

    assert seen["me"] == "alice" and seen["url_user"] == "alice" and seen["uid"] == 1000
    assert seen["env_mentions_other"] == [] and seen["proc_environ_mentions_other"] == []
    assert set(seen["host_paths"].values()) == {"FileNotFoundError"}, seen["host_paths"]
    assert seen["docker_socket"] is False
    assert seen["mounts_other"] is False and seen["mounts_own"] is True, "alice's volume, and only hers"
    assert "the-queue" in seen["home"] and not [f for f in seen["home"] if "bob" in f]
    assert set(seen["keys"].values()) == {"NOPERM"} and len(seen["keys"]) == len(bob_keys)
    assert seen["own_write"] is True
    assert seen["other_node"] == "AuthenticationError"
    assert seen["other_server"] == 403
    print(
        f"hub test: sign-ups, approvals and logins {t_accounts - t0:.1f} s; both containers ready "
        f"{t_ready - t_accounts:.1f} s later; 00-start-here ({cells} cells) run by alice, bob's job "
        f"in {t_ran - t_ready:.1f} s; alice's kernel saw {seen['pids_seen']} processes"
    )


# -- a student who tries: each attack from inside alice's container, against bob and the node ----------------------
def ensure_server(hub: Hub, name: str) -> None:
    server = hub.api("GET", f"/hub/api/users/{name}").json().get("servers", {}).get("")
    if not (server and server.get("ready")):
        start_server(hub, name)
        wait_ready(hub, name)


# alice's kernel: her client on the shared node, and the attacks module's functions (sent as text)
ARM = """
import json as _j, os as _o, socket as _s, time as _t
import redis as _r
from echomq_teach.connector import address_from_url as _a, make_client as _m
_atk = {}
exec(ATTACKS, _atk)
_me = _m(_a(_o.environ["ECHOMQ_URL"]))
def _try(fn):
    try:
        return {"reply": repr(fn())[:120]}
    except Exception as exc:  # every refusal, whatever its class, is what we report
        return {"error": type(exc).__name__ + ": " + str(exc)[:160]}
print("OUT" + _j.dumps({"url": _o.environ["ECHOMQ_URL"].split("@")[-1]}))
"""

# finding 1: the cluster bus. Alice starts a cluster-mode node of her own in her container and asks it to
# meet the shared node's bus (port + 10000) on the loopback she shares with the host; then she looks for
# any listener on that loopback that could be it, and asks the shared node itself to meet hers
BUS = """
from echomq_teach.nodes.host import free_port as _fp
from echomq_teach.nodes.local import LocalNode as _L
_listening = set()
for _f in ("/proc/net/tcp", "/proc/net/tcp6"):
    for _line in open(_f).read().splitlines()[1:]:
        _p = _line.split()
        if _p[3] == "0A":
            _listening.add(int(_p[1].rsplit(":", 1)[1], 16))
_mine = _L(extra_config={"cluster-enabled": "yes", "cluster-config-file": "nodes.conf", "cluster-port": str(_fp()),
                         "cluster-node-timeout": "2000"})
_mc = _mine.client()
_out = {"listening_node": 6390 in _listening, "listening_bus": 16390 in _listening}
_mc.execute_command("CLUSTER", "MEET", "127.0.0.1", 6390, 16390)
_t.sleep(4)
# CLUSTER NODES: id, address, flags, primary, ping, pong, epoch, link state, slots
_out["mine_knows"] = [l for l in _mc.execute_command("CLUSTER", "NODES").splitlines() if "myself" not in l]
_out["meet_via_socket"] = _try(lambda: _me.execute_command("CLUSTER", "MEET", "127.0.0.1", _mine.port,
                                                           int(_mine.client().config_get("cluster-port")["cluster-port"])))
_out["failover_via_socket"] = _try(lambda: _me.execute_command("CLUSTER", "FAILOVER", "TAKEOVER"))
_mc.close(); _mine.stop()
print("OUT" + _j.dumps(_out))
"""

CVES_ALICE = """
_out = {"unpack": attacks_unpack(), "hll": _atk["hll_overflow"](_me, "emq:{alice.cve}:h1", "emq:{alice.cve}:h2"),
        "plant": _atk["metatable_plant"](_me, VICTIM_ROW, VICTIM_MARK)}
print("OUT" + _j.dumps(_out))
""".replace("attacks_unpack()", '_atk["unpack_overflow"](_me)')

VICTIM_BOB = """
import json as _j, os as _o
from echomq_teach.connector import address_from_url as _a, make_client as _m
_b = _m(_a(_o.environ["ECHOMQ_URL"]))
print("OUT" + _j.dumps({"upper": _b.eval(VICTIM_SCRIPT, 1, VICTIM_ROW)}))
"""

LOOT = """print("OUT" + _j.dumps(_atk["metatable_loot"](_me)))"""

# finding 3: every TCP listener on the loopback, subscribed to as an IOPub socket would be, while bob prints
SNIFF_START = """
import zmq as _z
_ports = set()
for _f in ("/proc/net/tcp", "/proc/net/tcp6"):
    for _line in open(_f).read().splitlines()[1:]:
        _p = _line.split()
        if _p[3] == "0A":
            _ports.add(int(_p[1].rsplit(":", 1)[1], 16))
_ctx = _z.Context()
_subs = []
for _port in sorted(_ports):
    _sk = _ctx.socket(_z.SUB)
    _sk.setsockopt(_z.SUBSCRIBE, b"")
    _sk.setsockopt(_z.RECONNECT_IVL, 1000)
    _sk.setsockopt(_z.LINGER, 0)
    _sk.connect(f"tcp://127.0.0.1:{_port}")
    _subs.append(_sk)
print("OUT" + _j.dumps({"ports": len(_ports)}))
"""
SNIFF_COLLECT = """
_heard = []
_poller = _z.Poller()
for _sk in _subs:
    _poller.register(_sk, _z.POLLIN)
_end = _t.monotonic() + 4
while _t.monotonic() < _end:
    for _sk, _ev in _poller.poll(200):
        _heard.append(b"".join(_sk.recv_multipart()))
for _sk in _subs:
    _sk.close()
_ctx.term()
print("OUT" + _j.dumps({"frames": len(_heard), "marker": any(MARKER.encode() in _h for _h in _heard)}))
"""
BOB_TRANSPORT = """
import json as _j
from ipykernel.kernelapp import IPKernelApp as _K
_c = _j.load(open(_K.instance().abs_connection_file))
print("OUT" + _j.dumps({"transport": _c["transport"], "ip": _c["ip"]}))
"""

# finding 4: a script that takes 16 MB strings until it has 1 GB, past the 64 MB cap
LUA_MEMORY = """
_big = ("#!lua flags=no-writes\\n"
        "local t = {} for i = 1, 64 do t[i] = string.rep('x', 16 * 1024 * 1024) .. i end return #t")
# a client that waits as long as the script runs (16 MB pages are slow to come by in a capped container)
_slow = _r.Redis(**{**_a(_o.environ["ECHOMQ_URL"]), "socket_timeout": 180})
_out = {"big": _try(lambda: _slow.eval(_big, 0))}
_slow.close()
# SCRIPT LOAD of distinct 1 MB scripts until the node is past its cap: accepted (Valkey has no cap on it)
_loaded = 0
for _i in range(100):
    _r2 = _try(lambda: _me.script_load("return '" + ("y" * 1024 * 1024) + str(_i) + "'"))
    if "error" in _r2:
        _out["load_refused"] = _r2
        break
    _loaded += 1
_out["loaded"] = _loaded
_out["write_after"] = _try(lambda: _me.set("emq:{alice.mem}:x", "1"))
print("OUT" + _j.dumps(_out))
"""

# finding 5: connections until the node refuses them
EXHAUST = """
_held = []
_refused = None
for _i in range(200):
    try:
        _c = _m(_a(_o.environ["ECHOMQ_URL"]))
        _c.ping()
        _held.append(_c)
    except _r.exceptions.RedisError as exc:
        _refused = str(exc)[:120]
        break
print("OUT" + _j.dumps({"held": len(_held), "refused": _refused}))
"""

# finding 6: the smaller leaks
LEAKS = """
_out = {"tracking": _try(lambda: _me.execute_command("CLIENT", "TRACKING", "on", "BCAST")),
        "info_keyspace": _try(lambda: _me.execute_command("INFO", "keyspace")),
        "info_all": _try(lambda: _me.execute_command("INFO")),
        "info_server": _try(lambda: _me.info("server")["valkey_version"])}
print("OUT" + _j.dumps(_out))
"""


# -- the instructor's live view, fed by the students' own kernels in their containers -------------------------------
# a kernel's check, as a learner runs it: the kit reports the verdict to the live view in the background
CHECK = """
import json as _j
from echomq_teach import start_node as _sn
from echomq_teach.course import exercises as _ex
_ns = {"__name__": "solution"}
exec(SOLUTION, _ns)
_fn = [f for f in _ns.values() if callable(f) and getattr(f, "__module__", None) == "solution"][0]
_c = _sn().connector()
_v = [_ex.check(KEY, _fn if WITH else (lambda *a: None), _c) for _ in range(TIMES)]
print("OUT" + _j.dumps({"ok": [v.ok for v in _v]}))
"""


def _plain_exercise() -> tuple[str, str]:
    """An exercise checked on the learner's own node with one connector, and its reference solution's text."""
    assert exercises.titles()  # importing the exercises fills the registry
    for key, ex in sorted(registry.REGISTRY.items()):
        if ex.judge is None and ex.run is None and not key.startswith("04.") and ex.solution:
            return key, (ROOT / "notebooks" / "solutions" / ex.solution).read_text()
    raise AssertionError("no exercise is checked on the learner's node with one connector")


def test_the_live_view_shows_each_students_checks_and_who_never_reported(hub: Hub) -> None:
    from browser_support import ARTIFACTS, chromium, require_chromium

    require_chromium()
    for name in USERS:
        ensure_server(hub, name)
    tokens = {name: user_token(hub, name) for name in (*USERS, ADMIN)}
    key, solution = _plain_exercise()
    runs = {"alice": (True, 1), "bob": (False, 2)}  # alice solves it; bob fails it twice
    kernels = {}
    try:
        for name, (with_solution, times) in runs.items():
            kernels[name] = Kernel(hub, name, tokens[name], START_HERE.name)
            code = (CHECK.replace("SOLUTION", repr(solution)).replace("WITH", repr(with_solution))
                    .replace("KEY", repr(key)).replace("TIMES", str(times)))
            assert kernels[name].json(code)["ok"] == [with_solution] * times
    finally:
        for k in kernels.values():
            k.close()
    service = f"{hub.base}/services/echomq-progress/"  # the live view (echomq_teach/hub/progress.py)

    def grid(token: str) -> requests.Response:
        return requests.get(service + "api/grid", headers={"Authorization": f"token {token}"}, timeout=10)

    # the reports travel on a background thread of each kernel: wait for both (bounded)
    deadline = time.monotonic() + 30
    while True:
        g = grid(tokens[ADMIN]).json()
        if g["cells"].get(f"alice\t{key}") == "solved" and g["cells"].get(f"bob\t{key}") == "tried 2":
            break
        assert time.monotonic() < deadline, (g, hub.log_tail())
        time.sleep(0.3)
    # carol is on the roster and never signed up; the instructor is no student
    assert g["silent"] == [ROSTER_ONLY] and g["problems"] == []
    assert set(g["students"]) == {*USERS, ROSTER_ONLY}
    assert grid(tokens["bob"]).status_code == 403  # a student's token reads nothing
    page = requests.get(service, headers={"Authorization": f"token {tokens['bob']}"}, timeout=10)
    assert page.status_code == 403 and "Who is where" not in page.text
    csv = requests.get(service + "grid.csv", headers={"Authorization": f"token {tokens[ADMIN]}"}, timeout=10).text
    assert f"{ROSTER_ONLY},not started" in csv.splitlines()

    ARTIFACTS.mkdir(exist_ok=True)
    with chromium() as browser:
        pg = browser.new_page(viewport={"width": 1000, "height": 600},
                              extra_http_headers={"Authorization": f"token {tokens[ADMIN]}"})
        pg.goto(service)
        pg.get_by_role("heading", name="Who is where").wait_for()
        rows = {r.split()[0]: r for r in pg.locator("table tr").all_inner_texts()}
        assert "✓ solved" in rows["alice"] and "tried 2" in rows["bob"]
        assert "never reported" in rows[ROSTER_ONLY] and "not started" in rows[ROSTER_ONLY]
        pg.screenshot(path=str(ARTIFACTS / "hub-live-view.png"), full_page=True)


def test_a_student_who_tries_is_refused(hub: Hub) -> None:
    for name in USERS:
        ensure_server(hub, name)
    tokens = {name: user_token(hub, name) for name in USERS}
    admin = hub.admin()
    before = hub.node_state()
    run_id = admin.info("server")["run_id"]
    assert admin.info("server")["valkey_version"] == valkey.PINNED
    assert before["host"]["NetworkMode"] == "none" and before["host"]["Memory"] > 0
    row, mark = "emq:{bob.cve}:job:1", "emq:{bob.cve}:mark"
    admin.hset(row, "payload", "bob's payload")
    bob_keys = {k: admin.type(k) for k in admin.scan_iter("emq:{bob.*}:*")}
    consts = {"VICTIM_ROW": repr(row), "VICTIM_MARK": repr(mark), "VICTIM_SCRIPT": repr(attacks.VICTIM_SCRIPT)}

    def fill(code: str) -> str:
        for k, v in consts.items():
            code = code.replace(k, v)
        return code

    alice = Kernel(hub, "alice", tokens["alice"], START_HERE.name)
    bob = Kernel(hub, "bob", tokens["bob"], START_HERE.name)
    try:
        seen = alice.json(ARM.replace("ATTACKS", repr(inspect.getsource(attacks))))
        assert seen["url"] == f"{compose.STUDENT_SOCKET_DIR}/{compose.SOCKET_NAME}"

        # 1. the cluster bus: nothing on the shared loopback is the node, and the node obeys no MEET
        bus = alice.json(BUS)
        assert bus["listening_node"] is False and bus["listening_bus"] is False, bus
        assert not [n for n in bus["mine_knows"] if n.split()[7] == "connected"], bus
        for attempt in ("meet_via_socket", "failover_via_socket"):
            assert "NoPermissionError" in bus[attempt]["error"], bus
        info = dict(line.split(":", 1) for line in admin.execute_command("CLUSTER", "INFO").splitlines() if ":" in line)
        assert info["cluster_known_nodes"] == "1" and info["cluster_slots_assigned"] == "16384"
        assert "myself,master" in admin.execute_command("CLUSTER", "NODES")

        # 2. the three inputs that broke Valkey 8.0.1
        cves = alice.json(fill(CVES_ALICE))
        assert "too many results to unpack" in cves["unpack"]["error"]
        assert all(str(v).startswith("error: INVALIDOBJ") for v in cves["hll"].values()), cves["hll"]
        assert "readonly table" in cves["plant"]["error"]
        assert bob.json(fill(VICTIM_BOB))["upper"] == "BOB'S PAYLOAD"
        assert alice.json(LOOT) == {"loot": []} and admin.exists(mark) == 0

        # 3. kernel sniffing: bob's kernel listens on no TCP port; alice hears nothing of his
        assert bob.json(BOB_TRANSPORT)["transport"] == "ipc"
        marker = f"BOB-MARKER-{uuid.uuid4().hex}"
        sniff = alice.json(SNIFF_START)
        assert sniff["ports"] > 0  # she did find listeners (the hub, the servers) and subscribed to each
        for _ in range(3):
            bob.run(f"print({marker!r})")
        heard = alice.json(SNIFF_COLLECT.replace("MARKER", repr(marker)))
        assert heard["marker"] is False, heard

        # 4. Lua and script memory past the cap
        mem = alice.json(LUA_MEMORY)
        assert "not enough memory" in mem["big"]["error"], mem
        state = hub.node_state()
        assert state["restarts"] == 0 and not state["oom"] and state["started"] == before["started"]
        assert admin.info("server")["run_id"] == run_id, "the node is the same process"
        # SCRIPT LOAD is accepted past the cap (documented): every write waits until the instructor flushes
        assert mem["loaded"] >= 1
        assert provision.flush_scripts(admin) >= mem["loaded"]
        assert bob.run("print(bool(_b.set('emq:{bob.after}:x', '1')))").strip() == "True"

        # 6. tracking and INFO
        leaks = alice.json(LEAKS)
        assert "NoPermissionError" in leaks["tracking"]["error"]
        for attempt in ("info_keyspace", "info_all"):
            assert "NoPermissionError" in leaks[attempt]["error"], leaks
        assert leaks["info_server"]["reply"] == repr(valkey.PINNED)

        # 5. connection exhaustion: the instructor still acts, from the host, not through the node
        ex = alice.json(EXHAUST)
        # the node answers "max number of clients reached" and closes: the client sees that, or the closed pipe
        assert ex["refused"] and ex["held"] >= MAXCLIENTS - 10, ex
        with pytest.raises(redis.exceptions.RedisError):
            hub.admin().ping()  # the instructor's new connection is refused too
        client = container.engine()
        try:
            counts = dict(holders(client))
        finally:
            client.close()
        assert max(counts, key=counts.get) == "alice" and counts["alice"] >= ex["held"], counts
        r = hub.api("DELETE", "/hub/api/users/alice/server")  # what /hub/admin's "stop server" does
        assert r.status_code in (202, 204), (r.status_code, r.text)
        deadline = time.monotonic() + 60
        while True:
            try:
                fresh = hub.admin()
                fresh.ping()
                break
            except redis.exceptions.RedisError:
                assert time.monotonic() < deadline, "the node did not get its connections back"
                time.sleep(0.5)
        assert provision.revoke(fresh, ["alice"]) == 1
        fresh.close()
    finally:
        for k in (alice, bob):
            try:
                k.close()
            except Exception:  # noqa: BLE001 - alice's server is gone by now
                pass

    # afterwards: the node is the same process, never restarted; bob's keys are all there, his data whole
    after = hub.node_state()
    assert after["running"] and after["restarts"] == 0 and after["started"] == before["started"]
    assert admin.info("server")["run_id"] == run_id
    assert {k: admin.type(k) for k in bob_keys} == bob_keys and admin.hget(row, "payload") == "bob's payload"
    admin.close()
