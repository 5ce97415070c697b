"""The classroom's JupyterHub, in its production configuration (mark ``hub``).

The hub runs ``docker/jupyterhub_config.py`` as it is deployed: as root, the
classroom authenticator (the native authenticator: a password of each
student's own, sign-ups approved by the instructor, the instructor an admin
made from a root-only password file), one container per student from the
offline course image (DockerSpawner on the private engine the suite starts),
with no network of its own, every door a Unix socket (the hub's API, the
student's server, the shared nodes, the live view's reports),
configurable-http-proxy on 127.0.0.1, and the shared scripted and native nodes
as docker/compose.yaml runs them, with one ACL user per student provisioned
into a root-only credentials file and the kit's scripts kept on them by the
hub's ``echomq-scripts`` service.

Two students sign up and log in with their own passwords, the instructor
authorizes them, alice runs ``notebooks/00-start-here.ipynb`` cell by cell in a
kernel of her own server (over the kernel websocket, through the proxy: in CI,
00's one run beside nbval), bob's kernel enqueues a job of his own, and then,
from inside alice's kernel, the test proves that bob's files, credentials,
environment, server, node and keys are out of reach; alice
cannot log in as bob. The instructor's live view then shows what the two
kernels' checks reported, and the roster's third name as never reported, in
Chromium. Then alice tries every attack of docs/classroom.md's "A student who
tries" from her container, each one's refusal checked (issue 33's squats,
tokens, floods and the Lua crash among them). Everything started is stopped
by PID (and container id) at the end. Needs: root, ``bash tools/install-hub.sh``, a Docker engine at
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

from echomq_teach.classroom import compose, credentials, kit_scripts, provision
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
    native_id: str  # the native node's container, and the instructor's URL for it (its socket)
    native_admin_url: str
    creds_path: Path
    proxy_api_port: int
    started: list[int] = field(default_factory=list)  # every PID seen, for the cleanup
    containers: dict[str, str] = field(default_factory=dict)  # student -> container id
    passwords: dict[str, str] = field(default_factory=dict)  # student -> the password they signed up with

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(self, method: str, path: str, token: str | None = None, **kw: object) -> requests.Response:
        headers = {"Authorization": f"token {token or self.token}"}
        return requests.request(method, f"{self.base}{path}", headers=headers, timeout=30, **kw)

    def admin(self) -> redis.Redis:
        return make_client(address_from_url(self.admin_url))

    def native_admin(self) -> redis.Redis:
        return make_client(address_from_url(self.native_admin_url))

    def node_state(self, cid: str | None = None) -> dict:
        client = container.engine()
        try:
            attrs = client.containers.get(cid or self.node_id).attrs
        finally:
            client.close()
        return {"started": attrs["State"]["StartedAt"], "restarts": attrs["RestartCount"],
                "oom": attrs["State"]["OOMKilled"], "running": attrs["State"]["Running"], "host": attrs["HostConfig"]}

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no hub log)"


def container_env(hub: Hub, name: str) -> dict[str, str]:
    """A student's container's environment, as the host reads it (``docker inspect``)."""
    client = container.engine()
    try:
        env = client.containers.get(f"echomq-{name}").attrs["Config"]["Env"]
    finally:
        client.close()
    return dict(e.split("=", 1) for e in env)


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


def compose_node(env: dict[str, str], name: str, service: str = "node") -> dict:
    """The docker SDK's ``run`` arguments for one of compose.yaml's node services, as compose reads it."""
    import docker

    svc = _interpolate(yaml.safe_load(COMPOSE.read_text())["services"][service], env)
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


def start_shared_nodes(room: Path, name: str) -> dict[str, tuple[str, str]]:
    """``classroom init`` and compose's two node services; answers each one's container id and admin URL."""
    admin_env = compose.init_folder(room, maxmemory=MAXMEMORY, maxclients=MAXCLIENTS)
    env = credentials.read_env_file(room / ".env")
    out = {}
    client = container.engine()
    try:
        for service, var in (("node", "ECHOMQ_ADMIN_URL"), ("native-node", "ECHOMQ_NATIVE_ADMIN_URL")):
            ct = client.containers.run(**compose_node(env, f"{name}-{service}", service))
            out[service] = (ct.id, admin_env[var])
    finally:
        client.close()
    for _, url in out.values():
        deadline = time.monotonic() + 30
        while True:
            try:
                c = make_client(address_from_url(url))
                c.ping()
                c.close()
                break
            except (redis.exceptions.ConnectionError, FileNotFoundError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    return out


def remove_container(cid: str, timeout: float = 30) -> None:
    """Remove a container this test started (or its hub did), and wait until the engine no longer lists it."""
    import docker

    client = container.engine()
    try:
        try:
            client.containers.get(cid).remove(force=True)
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as exc:  # "removal ... is already in progress": the hub's own
            if exc.status_code != 409:
                raise
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                client.containers.get(cid)
            except docker.errors.NotFound:
                return
            time.sleep(0.2)
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
    state = Path(tempfile.mkdtemp(prefix="emq-hub-"))  # 0700, root's; a lower-case path (it names sockets)
    nodes = start_shared_nodes(state / "room", f"emq-hub-{uuid.uuid4().hex[:8]}")
    (node_id, admin_url), (native_id, native_admin_url) = nodes["node"], nodes["native-node"]
    admin = make_client(address_from_url(admin_url))
    native_admin = make_client(address_from_url(native_admin_url))
    roster = state / "roster.txt"
    roster.write_text("\n".join([*USERS, ROSTER_ONLY]) + "\n")
    creds = state / "credentials.json"
    credentials.write_credentials(creds, provision.provision(admin, roster, native_admin))
    admin_password = secrets.token_urlsafe(12)
    credentials.write_secret(state / "instructor.password", admin_password + "\n")
    port, token, proxy_api_port = free_port(), uuid.uuid4().hex, free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECHOMQ_", "JUPYTER", "CONFIGPROXY"))}
    env.update(
        ECHOMQ_HUB_DIR=str(state / "hub"),
        ECHOMQ_HUB_PORT=str(port),
        ECHOMQ_HUB_API_PORT=str(free_port()),
        ECHOMQ_PROXY_API_PORT=str(proxy_api_port),
        ECHOMQ_PROGRESS_PORT=str(free_port()),  # the live view's page (echomq_teach/hub/progress.py)
        ECHOMQ_CLASSROOM_ROSTER=str(roster),
        # the hub's echomq-scripts service keeps the kit's scripts on both nodes (students may not load any)
        ECHOMQ_CLASSROOM_ADMIN_ENV=str(state / "room" / "admin.env"),
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
    h = Hub(proc, state, port, token, log, node_id, admin_url, admin_password, native_id, native_admin_url, creds,
            proxy_api_port, started=[proc.pid])
    try:
        deadline = time.monotonic() + 180  # a bound on waiting (a loaded machine starts a hub slowly)
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
        deadline = time.monotonic() + 30  # the hub removes its containers as it exits: a bound on that
        while (leftover := [ct for ct in _our_containers() if ct.status != "removing"]) and time.monotonic() < deadline:
            time.sleep(0.5)
        for ct in _our_containers():
            remove_container(ct.id)  # the hub may be removing it this very moment: gone either way
        _remove_volumes()
        admin.close()
        native_admin.close()
        remove_container(node_id)
        remove_container(native_id)
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
    assert r.status_code == 200, (r.status_code, r.text[:300], hub.log_tail(60))
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
# bob's own embedded node: its port is on his container's loopback, which alice's container does not share
try:
    _m({"host": "127.0.0.1", "port": _args["other_node_port"]}).ping()
    out["other_node"] = "answered"
except _r.exceptions.AuthenticationError:
    out["other_node"] = "AuthenticationError"
except _r.exceptions.ConnectionError as exc:
    out["other_node"] = "ConnectionError: " + str(exc)[:80]
# bob's server through the hub's public port: no network reaches it from here
req = _u.Request(_args["other_server"], headers={"Authorization": "token " + _o.environ["JUPYTERHUB_API_TOKEN"]})
try:
    out["other_server"] = _u.urlopen(req, timeout=10).status
except _ue.HTTPError as exc:
    out["other_server"] = exc.code
except _ue.URLError as exc:
    out["other_server"] = "unreachable: " + str(exc.reason)[:80]
out["interfaces"] = sorted(_o.listdir("/sys/class/net"))
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
    passwords = hub.passwords = {u: secrets.token_urlsafe(12) for u in USERS}

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
        assert attrs["HostConfig"]["NetworkMode"] == "none" and attrs["HostConfig"]["Memory"] > 0
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
    # no network but a loopback of her own: bob's node and server are not even reachable from her container
    assert seen["interfaces"] == ["lo"], seen["interfaces"]
    assert seen["other_node"].startswith("ConnectionError") and "refused" in seen["other_node"], seen["other_node"]
    assert str(seen["other_server"]).startswith("unreachable"), seen["other_server"]
    # and through the proxy, as her browser would go, her own server's token opens only her own server
    alice_token = container_env(hub, "alice")["JUPYTERHUB_API_TOKEN"]
    assert requests.get(args["other_server"], headers={"Authorization": f"token {alice_token}"},
                        timeout=30).status_code == 403
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

# bob runs the kit's own snapshot over his row: nothing of alice's runs inside it
VICTIM_BOB = """
import json as _j, os as _o
from echomq_teach import scripts as _sc
from echomq_teach.connector import address_from_url as _a, make_client as _m
_b = _m(_a(_o.environ["ECHOMQ_URL"]))
print("OUT" + _j.dumps({"rows": _b.evalsha(_sc.load("snapshot").sha, 1, VICTIM_ROW.rsplit("job:", 1)[0])[6]}))
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

# the Lua crash (issue 33): a script past the node's data limit left its garbage in the one Lua heap, and
# the next ordinary 4 MB SET, anyone's, made the node abort; and a script that takes its memory in small
# pieces. Here every way to run a script of her own is tried, then bob writes 4 MB
LUA_CRASH = """
_big = "local t = {} for i = 1, 64 do t[i] = string.rep('x', 16 * 1024 * 1024) .. i end return #t"
_small = "local t = {} for i = 1, 2000000 do t[i] = string.rep('x', 4000) .. i end return #t"
_library = "#!lua name=mine\\nserver.register_function('f', function() " + _small + " end)"
import hashlib as _h
_out = {"eval_big": _try(lambda: _me.eval(_big, 0)), "eval_small": _try(lambda: _me.eval(_small, 0)),
        "eval_ro": _try(lambda: _me.execute_command("EVAL_RO", _small, 0)),
        "script_load": _try(lambda: _me.script_load(_big)),
        "evalsha": _try(lambda: _me.evalsha(_h.sha1(_big.encode()).hexdigest(), 0)),
        "function_load": _try(lambda: _me.execute_command("FUNCTION", "LOAD", _library)),
        "fcall": _try(lambda: _me.execute_command("FCALL", "f", 0))}
print("OUT" + _j.dumps(_out))
"""
BOB_ENQUEUES = """
import json as _j
from echomq_teach import jobs as _jobs, start_node as _sn
_c = _sn().connector()
_id = _jobs.enqueue(_c, "after-restart", "still here")
print("OUT" + _j.dumps({"state": _jobs.row(_c, "after-restart", _id)["state"]}))
"""
BOB_WRITES_4MB = """
import json as _j, os as _o
from echomq_teach.connector import address_from_url as _a, make_client as _m
_b = _m(_a(_o.environ["ECHOMQ_URL"]))
_out = {"set": _b.set("emq:{bob.big}:x", "y" * (4 * 1024 * 1024)), "run_id": _b.info("server")["run_id"]}
_b.delete("emq:{bob.big}:x")
print("OUT" + _j.dumps(_out))
"""

# connections until each shared node refuses them: the scripted node's and the native node's sockets
EXHAUST = """
_held = {}
_refused = {}
for _var in ("ECHOMQ_URL", "ECHOMQ_NATIVE_URL"):
    _held[_var] = []
    for _i in range(200):
        try:
            _c = _m(_a(_o.environ[_var]))
            _c.ping()
            _held[_var].append(_c)
        except _r.exceptions.RedisError as exc:
            _refused[_var] = str(exc)[:120]
            break
print("OUT" + _j.dumps({"held": {k: len(v) for k, v in _held.items()}, "refused": _refused}))
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
        r = grid(tokens[ADMIN])
        assert r.status_code == 200, (r.status_code, hub.log_tail(80))
        g = r.json()
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


# -- nothing a student can squat: every port of the class, listed while it runs ---------------------------------
def _children(pid: int) -> set[int]:
    """``pid`` and every process below it (read from /proc)."""
    parent: dict[int, int] = {}
    for p in Path("/proc").glob("[0-9]*"):
        try:
            parent[int(p.name)] = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    out, todo = {pid}, [pid]
    while todo:
        here = todo.pop()
        kids = [c for c, pp in parent.items() if pp == here and c not in out]
        out.update(kids)
        todo += kids
    return out


def class_listeners(hub: Hub) -> dict[int, int]:
    """Every TCP port listening in the host's network namespace that a process of this class holds: port → PID.

    The class: the hub and everything it started (the proxy, its services, the containers' processes as the
    host sees them), and the shared nodes' containers.
    """
    pids = _children(hub.proc.pid)
    client = container.engine()
    try:
        for cid in [*hub.containers.values(), hub.node_id, hub.native_id]:
            try:
                pids |= {int(row[0]) for row in client.containers.get(cid).top(ps_args="-o pid")["Processes"] or []}
            except Exception:  # noqa: BLE001 - a container that is gone holds nothing
                continue
    finally:
        client.close()
    owner: dict[str, int] = {}
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:["):
                    owner[link[8:-1]] = pid
        except OSError:
            continue
    out: dict[int, str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in owner:  # LISTEN, held by the class
                out[int(f[1].rsplit(":", 1)[1], 16)] = owner[f[9]]
    return out


# alice, from her container, at each of those ports: can she reach one, or bind one in its place?
PORTS = """
_out = {}
for _p in PORTS_LIST:
    _c = _s.socket()
    _c.settimeout(3)
    try:
        _c.connect(("127.0.0.1", _p))
        _out[str(_p)] = {"connect": "connected"}
    except OSError as exc:
        _out[str(_p)] = {"connect": type(exc).__name__}
    _c.close()
_binds = []
for _p in PORTS_LIST:
    _l = _s.socket()
    try:
        _l.bind(("127.0.0.1", _p))
        _l.listen(8)
        _binds.append(_l)
        _out[str(_p)]["bind"] = "bound"
    except OSError as exc:
        _out[str(_p)]["bind"] = type(exc).__name__
print("OUT" + _j.dumps(_out))
"""
PORTS_COLLECT = """
_heard = 0
for _l in _binds:
    _l.settimeout(0.2)
    try:
        _l.accept()[0].close()
        _heard += 1
    except OSError:
        pass
    _l.close()
print("OUT" + _j.dumps({"heard": _heard}))
"""

# bob's server has died: alice listens wherever she can for 8 s, in case the proxy's next request for bob
# comes her way (before: she bound his freed port 0.17 s after his server died, and got his token)
SQUAT = """
_got = []
def _listen(_l):
    _l.settimeout(8)
    try:
        _c, _ = _l.accept()
        _got.append(_c.recv(4096).decode(errors="replace").split("\\r\\n")[0])
        _c.close()
    except OSError:
        pass
    _l.close()
_ls = []
for _p in (8888, 8000, 8001):
    _l = _s.socket()
    try:
        _l.bind(("127.0.0.1", _p)); _l.listen(8); _ls.append(_l)
    except OSError:
        _l.close()
for _path in ("/tmp/server.sock", "/run/echomq-server/bob.sock"):
    _u_ = _s.socket(_s.AF_UNIX)
    try:
        _u_.bind(_path); _u_.listen(8); _ls.append(_u_)
    except OSError:
        _u_.close()
import threading as _th
_ths = [_th.Thread(target=_listen, args=(_l,), daemon=True) for _l in _ls]
for _x in _ths: _x.start()
print("OUT" + _j.dumps({"listening": len(_ls), "mounts": [l.split()[4] for l in open("/proc/self/mountinfo")
                                                            if "/run/" in l.split()[4]]}))
"""
SQUAT_COLLECT = """
for _x in _ths: _x.join(10)
print("OUT" + _j.dumps({"heard": _got}))
"""


def test_nothing_a_student_can_reach_listens_on_a_port_of_the_class(hub: Hub) -> None:
    """Every port of the class on the host's loopback is the proxy's, and no student's container reaches it or
    takes its place; a student server that died leaves a route to a socket only its student's next server binds."""
    for name in USERS:
        ensure_server(hub, name)
    tokens = {name: user_token(hub, name) for name in USERS}
    from live_view import service_pid

    ports = class_listeners(hub)
    # held by the proxy (its public port and API), the live view (its page) and the hub (its API, and the port
    # it relays to each student's server socket, held for its whole life): no container's process, no node
    proxy = int((hub.state / "hub" / "proxy.pid").read_text())
    holders_seen = sorted(ports.values())
    assert holders_seen == sorted([proxy, proxy, service_pid(hub.state), *[hub.proc.pid] * (1 + len(USERS))]), ports
    assert ports[hub.port] == ports[hub.proxy_api_port] == proxy
    alice = Kernel(hub, "alice", tokens["alice"], START_HERE.name)
    try:
        alice.json(ARM.replace("ATTACKS", repr(inspect.getsource(attacks))))
        tried = alice.json(PORTS.replace("PORTS_LIST", repr(sorted(ports))))
        # she reaches none of them (a loopback of her own), and what she binds under their numbers is hers alone
        assert {v["connect"] for v in tried.values()} == {"ConnectionRefusedError"}, tried
        assert requests.get(f"{hub.base}/hub/api/", timeout=10).status_code == 200  # the class's own, still
        assert alice.json(PORTS_COLLECT)["heard"] == 0
        # bob's server dies: his route stays until the hub's next poll, to a socket in his own folder
        client = container.engine()
        try:
            bob_ct = client.containers.get(hub.containers["bob"])
            mounts = {m["Destination"]: m["Source"] for m in bob_ct.attrs["Mounts"]}
            alice_mounts = {m["Source"] for m in client.containers.get(hub.containers["alice"]).attrs["Mounts"]}
            squat = alice.json(SQUAT)
            bob_ct.kill()
        finally:
            client.close()
        assert mounts["/run/echomq-server"] not in alice_mounts and squat["listening"] >= 3, squat
        t0 = time.monotonic()
        r = requests.get(f"{hub.base}/user/bob/api/status", headers={"Authorization": f"token {tokens['bob']}"},
                         timeout=30, allow_redirects=False)
        heard = alice.json(SQUAT_COLLECT)["heard"]
        print(f"dead server: the proxy answered {r.status_code} in {time.monotonic() - t0:.2f} s; "
              f"alice's {squat['listening']} listeners heard {heard}")
        assert r.status_code in (502, 503, 424) and heard == [], (r.status_code, heard)
    finally:
        alice.close()
    # the hub forgets bob's dead server; his next one binds his socket again
    hub.api("DELETE", "/hub/api/users/bob/server")
    deadline = time.monotonic() + 60
    while hub.api("GET", "/hub/api/users/bob").json().get("servers", {}).get(""):
        assert time.monotonic() < deadline, hub.log_tail()
        time.sleep(0.5)
    ensure_server(hub, "bob")
    hub.containers.update({ct.name.removeprefix("echomq-"): ct.id for ct in _our_containers()})


# -- the live view: its reports' socket, its bounds, the token it takes ----------------------------------------------
LIVE_VIEW = """
import http.client as _hc
from urllib.parse import unquote as _uq
_path = _uq(_o.environ["ECHOMQ_PROGRESS_URL"].split("://", 1)[1].split("/", 1)[0])
class _U(_hc.HTTPConnection):
    def connect(self):
        self.sock = _s.socket(_s.AF_UNIX)
        self.sock.settimeout(30)
        self.sock.connect(_path)
def _post(body, token=None):
    _c = _U("localhost", timeout=30)
    try:
        _c.request("POST", "/api/verdicts", body=body if isinstance(body, str) else _j.dumps(body),
                   headers={"Authorization": "token " + (token or _o.environ["ECHOMQ_PROGRESS_TOKEN"])})
        return _c.getresponse().status
    except OSError as exc:
        return type(exc).__name__
    finally:
        _c.close()
def _big():
    _c = _s.socket(_s.AF_UNIX)
    _c.settimeout(30)
    _c.connect(_path)
    _c.sendall(b"POST /api/verdicts HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: %d\\r\\n\\r\\n" % (95 * 2**20))
    try:
        for _ in range(16):
            _c.sendall(b"x" * 65536)
    except OSError:
        pass  # closed on her: it took no more
    _first = _c.recv(200).split(b"\\r\\n")[0].decode()
    _c.close()
    return _first
_d = _o.path.dirname(_path)
_out = {"folder": sorted(_o.listdir(_d))}
for _what, _fn in (("bind", lambda: _s.socket(_s.AF_UNIX).bind(_d + "/mine.sock")),
                   ("replace", lambda: _o.unlink(_path)), ("rename", lambda: _o.rename(_path, _d + "/x"))):
    try:
        _fn()
        _out[_what] = "done"
    except OSError as exc:
        _out[_what] = type(exc).__name__ + ": " + str(exc.strerror)
_out["server_token"] = _post({"exercise": "01.2", "solved": True, "tries": 1}, _o.environ["JUPYTERHUB_API_TOKEN"])
_out["big"] = [_big() for _ in range(4)]
_out["names"] = [_post({"exercise": e, "solved": False, "tries": 1})
                 for e in ("x000001", "99.9", '=HYPERLINK("http://x.invalid","y")')]
_out["nan"] = _post('{"exercise": "01.2", "solved": false, "tries": 1, "at": NaN}')
_out["inf"] = _post('{"exercise": "01.2", "solved": false, "tries": 1, "at": Infinity}')
_t0 = _t.monotonic()
_codes = [_post({"exercise": "01.2", "solved": False, "tries": n}) for n in range(200)]
_out["flood"] = {"accepted": _codes.count(204), "refused": _codes.count(429), "s": round(_t.monotonic() - _t0, 2)}
print("OUT" + _j.dumps(_out))
"""
# with a report token taken from another student (bob's): what opens with it from her container
STOLEN = """
_hub = _uq(_o.environ["JUPYTERHUB_API_URL"].split("://", 1)[1].split("/", 1)[0])
def _hub_req(method, path, token):
    _c = _hc.HTTPConnection("localhost", timeout=30)
    _c.sock = _s.socket(_s.AF_UNIX)
    _c.sock.connect(_hub)
    _c.request(method, path, body=b"{}" if method != "GET" else None, headers={"Authorization": "token " + token})
    return _c.getresponse().status
_out = {p: _hub_req(m, p, STOLEN_TOKEN) for m, p in (("GET", "/hub/api/users"), ("POST", "/hub/api/users/bob/tokens"),
                                                      ("POST", "/hub/api/users/bob/server"),
                                                      ("GET", "/hub/api/users/bob/server/progress"))}
_out["report_as_bob"] = _post({"exercise": "01.3", "solved": False, "tries": 1}, STOLEN_TOKEN)
print("OUT" + _j.dumps(_out))
"""
REPLACE_DEAD_SERVICE = """
_out = {}
for _what, _fn in (("bind", lambda: _s.socket(_s.AF_UNIX).bind(_path)), ("replace", lambda: _o.unlink(_path))):
    try:
        _fn()
        _out[_what] = "done"
    except OSError as exc:
        _out[_what] = type(exc).__name__
print("OUT" + _j.dumps(_out))
"""


def test_the_live_view_holds_against_a_student(hub: Hub) -> None:
    """Alice, from her container, at the live view's door: a squat, big bodies, a flood, names, NaN, a token."""
    from live_view import peak_kb, service_pid

    from echomq_teach.hub import progress

    for name in USERS:
        ensure_server(hub, name)
    tokens = {name: user_token(hub, name) for name in (*USERS, ADMIN)}
    service = f"{hub.base}/services/echomq-progress/"

    def grid() -> dict:
        return requests.get(service + "api/grid", headers={"Authorization": f"token {tokens[ADMIN]}"},
                            timeout=30).json()

    before, pid = grid(), service_pid(hub.state)
    peak = peak_kb(pid)
    bob_env = container_env(hub, "bob")
    assert bob_env["ECHOMQ_PROGRESS_URL"].startswith("http+unix://%2Frun%2Fechomq-progress%2F")
    alice = Kernel(hub, "alice", tokens["alice"], START_HERE.name)
    bob = Kernel(hub, "bob", tokens["bob"], START_HERE.name)
    try:
        alice.json(ARM.replace("ATTACKS", repr(inspect.getsource(attacks))))
        seen = alice.json(LIVE_VIEW)
        # the reports' folder is read-only in her container: nothing of hers can stand in the service's place
        assert seen["folder"] == ["report.sock"] and all("Read-only" in seen[w] for w in ("bind", "replace", "rename"))
        assert seen["server_token"] == 403  # the token that opens her server reports nothing
        assert seen["big"] == ["HTTP/1.1 413 Request Entity Too Large"] * 4, seen["big"]
        peak_after = peak_kb(pid)
        assert peak_after - peak < 16 * 1024, (peak, peak_after)  # four 95 MB bodies: none was read
        assert seen["names"] == [400, 400, 400] and seen["nan"] == 400 and seen["inf"] == 400, seen
        rate = progress.Bounds().reports_per_minute
        flood = seen["flood"]
        assert flood["accepted"] <= rate and flood["accepted"] + flood["refused"] == 200, flood
        after = grid()
        assert after["exercises"] == sorted({*before["exercises"], "01.2"}), after["exercises"]
        csv = requests.get(service + "grid.csv", headers={"Authorization": f"token {tokens[ADMIN]}"}, timeout=30).text
        assert "HYPERLINK" not in csv and "x000001" not in csv
        # bob's report token, taken: it reports as bob, and opens nothing else, from her container or the proxy
        stolen = alice.json(STOLEN.replace("STOLEN_TOKEN", repr(bob_env["ECHOMQ_PROGRESS_TOKEN"])))
        assert stolen.pop("report_as_bob") == 204
        assert set(stolen.values()) <= {403, 404}, stolen
        for method, path in (("GET", "/user/bob/api/contents"), ("POST", "/user/bob/api/kernels"),
                             ("PUT", "/user/bob/api/contents/written-by-alice.txt")):
            r = requests.request(method, f"{hub.base}{path}", json={}, timeout=30, allow_redirects=False,
                                 headers={"Authorization": f"token {bob_env['ECHOMQ_PROGRESS_TOKEN']}"})
            assert r.status_code in (302, 403), (path, r.status_code, r.text[:2000], hub.log_tail(40))
        # the instructor clears alice's rows; bob's stay
        bob_cells = {k: v for k, v in grid()["cells"].items() if k.startswith("bob\t")}
        r = requests.delete(service + "api/students/alice", headers={"Authorization": f"token {tokens[ADMIN]}"},
                            timeout=30)
        assert r.status_code == 200 and r.json()["deleted"] >= 1
        cells = grid()["cells"]
        assert not [k for k in cells if k.startswith("alice\t")] and bob_cells.items() <= cells.items()
        # the service dies (here by SIGKILL; a crash or the out-of-memory killer would do the same): its socket
        # stays in its folder, where alice can neither bind nor replace it; bob's report goes nowhere of hers
        os.kill(pid, signal.SIGKILL)
        assert wait_gone([pid], 10) == []
        assert alice.json(REPLACE_DEAD_SERVICE) == {"bind": "OSError", "replace": "OSError"}
        key, _ = _plain_exercise()
        out = bob.run("import os\nfrom echomq_teach.course import progress_report as _pr\n"
                      "print(_pr.send(os.environ['ECHOMQ_PROGRESS_URL'], os.environ['ECHOMQ_PROGRESS_TOKEN'], "
                      f"{{'exercise': {key!r}, 'solved': False, 'tries': 1}}))")
        assert out.strip() == "None"  # answered by nobody: no listener stands where the service stood
    finally:
        alice.close()
        bob.close()
    print(f"live view: 4 bodies of 95 MB refused, peak memory {peak} → {peak_after} KiB; flood {seen['flood']}")


# -- logins: all from one address; a correct password is never refused for others' wrong ones ---------------------
LOGINS = """
import http.client as _hc
from urllib.parse import unquote as _uq, urlencode as _ue2
_hub = _uq(_o.environ["JUPYTERHUB_API_URL"].split("://", 1)[1].split("/", 1)[0])
def _conn():
    _c = _hc.HTTPConnection("localhost", timeout=90)
    _c.sock = _s.socket(_s.AF_UNIX)
    _c.sock.settimeout(90)
    _c.sock.connect(_hub)
    return _c
def _login(name, pw):
    _c = _conn()
    _c.request("GET", "/hub/login")
    _r = _c.getresponse()
    _r.read()
    _cookie = [v.split(";")[0] for k, v in _r.getheaders() if k.lower() == "set-cookie" and v.startswith("_xsrf")][0]
    _c.close()
    _c = _conn()
    _t0 = _t.monotonic()
    _c.request("POST", "/hub/login", body=_ue2({"username": name, "password": pw, "_xsrf": _cookie.split("=", 1)[1]}),
               headers={"Cookie": _cookie, "Content-Type": "application/x-www-form-urlencoded"})
    _r = _c.getresponse()
    _r.read()
    return {"status": _r.status, "s": round(_t.monotonic() - _t0, 2)}
print("OUT" + _j.dumps({"wrong": [_login("bob", "guess-%d-of-alice" % i) for i in range(WRONG)]}))
"""


def test_logins_one_student_cannot_block(hub: Hub) -> None:
    """Six wrong passwords for bob, from alice's container: bob's own opens at once; her next guesses are slowed."""
    ensure_server(hub, "alice")
    alice = Kernel(hub, "alice", user_token(hub, "alice"), START_HERE.name)
    try:
        alice.json(ARM.replace("ATTACKS", repr(inspect.getsource(attacks))))
        wrong = alice.json(LOGINS.replace("WRONG", "6"))["wrong"]
        assert {w["status"] for w in wrong} <= {200, 403}, wrong  # each refused: the login form again
        t0 = time.monotonic()
        assert login(hub, "bob", hub.passwords["bob"]) is not None, "bob's own password is refused"
        t_bob = time.monotonic() - t0
        slowed = alice.json(LOGINS.replace("WRONG", "1"))["wrong"][0]
    finally:
        alice.close()
    print(f"logins: 6 wrong for bob in {[w['s'] for w in wrong]} s; bob's own then opened in {t_bob:.2f} s; "
          f"the next wrong one answered after {slowed['s']} s")
    # past five wrong ones, each wrong one waits (1, 2, 4 … s) before it is answered
    assert slowed["status"] in (200, 403) and slowed["s"] >= 1.0, slowed


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

        # 2. the three inputs that broke Valkey 8.0.1: the two that need a script of her own never run
        cves = alice.json(fill(CVES_ALICE))
        no_eval = "no permissions to run the 'eval' command"
        assert no_eval in cves["unpack"]["error"] and no_eval in cves["plant"]["error"], cves
        assert all(str(v).startswith("error: INVALIDOBJ") for v in cves["hll"].values()), cves["hll"]
        assert bob.json(fill(VICTIM_BOB))["rows"] == [row, ["payload", "bob's payload"]]
        assert no_eval in alice.json(LOOT)["error"] and admin.exists(mark) == 0

        # 3. kernel sniffing: bob's kernel listens on no TCP port, and alice's loopback is her container's own
        assert bob.json(BOB_TRANSPORT)["transport"] == "ipc"
        marker = f"BOB-MARKER-{uuid.uuid4().hex}"
        alice.json(SNIFF_START)  # she subscribes to every listener she can find
        for _ in range(3):
            bob.run(f"print({marker!r})")
        heard = alice.json(SNIFF_COLLECT.replace("MARKER", repr(marker)))
        assert heard["marker"] is False, heard

        # 4. the Lua crash: before, a big allocation left its garbage in the Lua heap and bob's next 4 MB SET
        # made the node abort (and a script of small pieces took it down too). No script of hers runs here now
        crash = alice.json(LUA_CRASH)
        for attempt in ("eval_big", "eval_small", "eval_ro", "script_load", "function_load", "fcall"):
            assert "NoPermissionError" in crash[attempt]["error"], (attempt, crash)
        assert "NoScriptError" in crash["evalsha"]["error"], crash  # a script of hers is not in the cache
        wrote = bob.json(BOB_WRITES_4MB)
        assert wrote["set"] is True and wrote["run_id"] == run_id, "the node keeps its run id after the next write"
        state = hub.node_state()
        assert state["restarts"] == 0 and not state["oom"] and state["started"] == before["started"]

        # 6. tracking and INFO
        leaks = alice.json(LEAKS)
        assert "NoPermissionError" in leaks["tracking"]["error"]
        for attempt in ("info_keyspace", "info_all"):
            assert "NoPermissionError" in leaks[attempt]["error"], leaks
        assert leaks["info_server"]["reply"] == repr(valkey.PINNED)

        # 5. connection exhaustion on both shared nodes: the instructor acts from the host, not through them
        ex = alice.json(EXHAUST)
        # a full node answers "max number of clients reached" and closes: the client sees that, or the closed pipe
        for var in ("ECHOMQ_URL", "ECHOMQ_NATIVE_URL"):
            assert ex["refused"].get(var) and ex["held"][var] >= MAXCLIENTS - 10, ex
        for fresh_client in (hub.admin, hub.native_admin):
            with pytest.raises(redis.exceptions.RedisError):
                fresh_client().ping()  # the instructor's new connection is refused too, on each node
        client = container.engine()
        try:
            counts = dict(holders(client))
        finally:
            client.close()
        assert max(counts, key=counts.get) == "alice" and counts["alice"] >= sum(ex["held"].values()), counts
        r = hub.api("DELETE", "/hub/api/users/alice/server")  # what /hub/admin's "stop server" does
        assert r.status_code in (202, 204), (r.status_code, r.text)
        for fresh_client in (hub.admin, hub.native_admin):
            deadline = time.monotonic() + 60
            while True:
                try:
                    fresh = fresh_client()
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

    # a restart empties the node's script cache: the hub's echomq-scripts service loads the kit's again,
    # and bob's kit (which may load none) waits for it and goes on
    client = container.engine()
    try:
        client.containers.get(hub.node_id).restart(timeout=5)
    finally:
        client.close()
    deadline = time.monotonic() + 60
    while True:
        try:
            again = hub.admin()
            missing = kit_scripts.missing(again)
            serving = "cluster_state:ok" in again.execute_command("CLUSTER", "INFO")  # its slots are its own again
            again.close()
            if not missing and serving:
                break
        except redis.exceptions.RedisError:
            pass
        assert time.monotonic() < deadline, f"the kit's scripts are not back after a restart:\n{hub.log_tail()}"
        time.sleep(0.2)
    bob = Kernel(hub, "bob", tokens["bob"], START_HERE.name)
    try:
        assert bob.json(BOB_ENQUEUES)["state"] == "pending"
    finally:
        bob.close()
    admin.close()
