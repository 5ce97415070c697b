# JupyterHub for a classroom of The Queue (also what tests/classroom/test_hub.py runs, unchanged).
#
# The hub runs as root on the classroom's host. Its ports are all on the host's
# 127.0.0.1: the proxy's public port (serve the room through a TLS reverse proxy
# of your own) and API, the hub's API, the live view's page, and one port per
# student's server that the hub holds for its whole life (echomq_teach/hub/relay.py).
# Students' containers have no network at all (a loopback of their own): every
# door between them and the rest is a Unix socket mounted into them, so no port
# on the host is one a student could reach, or bind in a crashed process's
# place (docs/classroom.md).
#
# - Who: echomq_teach.hub.authenticator.ClassroomAuthenticator (the native
#   authenticator): each student signs up with a password of their own, only
#   roster names may, and the instructor authorizes each sign-up at
#   /hub/authorize. The instructor (an admin) is created at start from a
#   root-only password file (`classroom init` writes instructor.password).
# - Where: echomq_teach.hub.spawner.ClassroomSpawner (DockerSpawner): one container
#   per student from the offline course image, on the engine at DOCKER_HOST,
#   with no network, a memory and CPU cap and a named volume echomq-<name> for
#   their work; the server listens on a socket the proxy reaches
#   (echomq_teach.hub.proxy.SocketProxy).
# - Their node: with ECHOMQ_CLASSROOM_CREDENTIALS (root-only), each student's
#   container gets ECHOMQ_URL / ECHOMQ_NAMESPACE (/ ECHOMQ_NATIVE_URL) of their
#   own in its environment; without it, each kernel starts embedded nodes.
#
# Environment:
#   ECHOMQ_HUB_DIR            state: database, cookie secret, pid files, sockets (default ./hub-state), made
#                             0700; keep its path short (it names Unix sockets)
#   ECHOMQ_HUB_PORT           public port (8000); ECHOMQ_HUB_API_PORT (8081); ECHOMQ_PROXY_API_PORT (8001)
#   ECHOMQ_CLASSROOM_ROSTER   the roster file: only its students may sign up (required)
#   ECHOMQ_HUB_ADMIN          the instructor's hub name (default "instructor")
#   ECHOMQ_HUB_ADMIN_PASSWORD_FILE  the instructor's password, a root-only file (required)
#   ECHOMQ_CLASSROOM_CREDENTIALS    the provisioned credentials file (set-up b)
#   ECHOMQ_CLASSROOM_SOCKETS  the shared nodes' socket folder (DIR/node/run), mounted read-only
#                             into each student's container at /run/echomq (set-up b)
#   ECHOMQ_CLASSROOM_ADMIN_ENV  DIR/admin.env: the hub's echomq-scripts service keeps the kit's scripts
#                             on the shared nodes through every restart (students may not load any; set-up b)
#   ECHOMQ_COURSE_IMAGE       the course image (default echomq-course:local)
#   ECHOMQ_HUB_MEM_LIMIT      each student's container memory cap (default 2G); ECHOMQ_HUB_CPU_LIMIT (1.0)
#   ECHOMQ_CHP                configurable-http-proxy (default: PATH, then build/hub-proxy)
#   ECHOMQ_PROGRESS           0 turns the instructor's live view off; ECHOMQ_PROGRESS_PORT its page's port (8002,
#                             on the host's loopback: no student's container reaches it); the reports come in on a
#                             socket; ECHOMQ_PROGRESS_UID the uid it runs as (65533)
#   ECHOMQ_HUB_API_TOKEN      a token for the "echomq-admin" service (automation, the hub test)
# `c` is the config object JupyterHub passes in
# ruff: noqa: F821
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

repo = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(repo))  # the kit, for the authenticator and the spawner


def required(name: str) -> str:
    value = os.environ.get(name, "")
    if not value or not Path(value).exists():
        raise SystemExit(f"jupyterhub_config: set {name} to an existing file (see docs/classroom.md)")
    return value


state = Path(os.environ.get("ECHOMQ_HUB_DIR", "hub-state")).resolve()
state.mkdir(parents=True, exist_ok=True)
state.chmod(0o700)

from echomq_teach.hub import progress, sockets  # noqa: E402 - after the path is set
from echomq_teach.hub.spawner import COURSE_DIR  # noqa: E402

port = int(os.environ.get("ECHOMQ_HUB_PORT", "8000"))
hub_api_port = int(os.environ.get("ECHOMQ_HUB_API_PORT", "8081"))
proxy_api_port = int(os.environ.get("ECHOMQ_PROXY_API_PORT", "8001"))
run = state / "run"  # the hub API's socket (relayed to its port): mounted read-only into every student's container
run.mkdir(mode=0o755, exist_ok=True)
run.chmod(0o755)
HUB_MOUNT = "/run/echomq-hub"

c.JupyterHub.bind_url = f"http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{hub_api_port}"
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(state / "jupyterhub.pid")
# the hub stops the servers and the proxy it started when it exits
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True

chp = os.environ.get("ECHOMQ_CHP") or shutil.which("configurable-http-proxy")
if not chp:
    local = repo / "build" / "hub-proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
    chp = str(local) if local.exists() else "configurable-http-proxy"
c.ConfigurableHTTPProxy.command = [chp]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")

# -- who may log in ----------------------------------------------------------------------------------
admin = os.environ.get("ECHOMQ_HUB_ADMIN", "instructor")
c.JupyterHub.authenticator_class = "echomq_teach.hub.authenticator.ClassroomAuthenticator"
c.ClassroomAuthenticator.roster_file = required("ECHOMQ_CLASSROOM_ROSTER")
c.ClassroomAuthenticator.instructor_password_file = required("ECHOMQ_HUB_ADMIN_PASSWORD_FILE")
c.Authenticator.admin_users = {admin}
c.NativeAuthenticator.open_signup = False
c.NativeAuthenticator.minimum_password_length = 10
c.NativeAuthenticator.check_common_password = True
c.NativeAuthenticator.allowed_failed_logins = 5
c.NativeAuthenticator.seconds_before_next_try = 120

# -- the instructor's live view (echomq_teach/hub/progress.py): on unless ECHOMQ_PROGRESS=0 -----------------
reports = None
if os.environ.get("ECHOMQ_PROGRESS", "1") != "0":
    reports = progress.configure(
        c, str(state), f"http://127.0.0.1:{port}", int(os.environ.get("ECHOMQ_PROGRESS_PORT", "8002")), [admin],
        roster=required("ECHOMQ_CLASSROOM_ROSTER"),  # its students have a row before they first sign in
        mode="socket", uid=int(os.environ.get("ECHOMQ_PROGRESS_UID", str(progress.DEFAULT_UID))),
    )

# -- the kit's scripts on the shared nodes (students call them by EVALSHA and may load none) ------------------
if os.environ.get("ECHOMQ_CLASSROOM_ADMIN_ENV"):
    c.JupyterHub.services.append({
        "name": "echomq-scripts",
        # a managed service: the hub starts it, and starts it again if it ends
        "command": [sys.executable, "-m", "echomq_teach.classroom", "keep-scripts",
                    "--admin-env", required("ECHOMQ_CLASSROOM_ADMIN_ENV")],
        "environment": {"PYTHONPATH": str(repo)},
    })

if os.environ.get("ECHOMQ_HUB_API_TOKEN"):
    c.JupyterHub.services.append({"name": "echomq-admin", "api_token": os.environ["ECHOMQ_HUB_API_TOKEN"]})
    c.JupyterHub.load_roles.extend([
        {
            "name": "echomq-admin",
            "scopes": ["admin:users", "admin:servers", "tokens", "access:servers", "list:users"],
            "services": ["echomq-admin"],
        }
    ])

# -- each student's server: a container of their own --------------------------------------------------------
c.JupyterHub.spawner_class = "echomq_teach.hub.spawner.ClassroomSpawner"
c.ClassroomSpawner.credentials_file = os.environ.get("ECHOMQ_CLASSROOM_CREDENTIALS", "")
c.DockerSpawner.image = os.environ.get("ECHOMQ_COURSE_IMAGE", "echomq-course:local")
c.DockerSpawner.pull_policy = "never"  # the offline image is built here; nothing is pulled
# no network: a loopback of the container's own; what it needs comes in as sockets, mounted below
c.DockerSpawner.network_name = "none"
c.ClassroomSpawner.server_sockets = str(state / "servers")
c.ClassroomSpawner.hub_socket = str(run / "hub.sock")
c.DockerSpawner.hub_connect_url = sockets.unix_url(f"{HUB_MOUNT}/hub.sock")
c.DockerSpawner.remove = True  # a stopped server's container goes; the student's volume stays
c.DockerSpawner.name_template = "echomq-{username}"
c.DockerSpawner.volumes = {
    "echomq-{username}": COURSE_DIR,
    str(run): {"bind": HUB_MOUNT, "mode": "ro"},  # the hub's API
}
if reports is not None:  # the live view's reports, and nothing else of the service's
    c.DockerSpawner.volumes[str(reports)] = {"bind": progress.REPORT_MOUNT, "mode": "ro"}
if os.environ.get("ECHOMQ_CLASSROOM_SOCKETS"):
    # the shared nodes' only door: their socket folder, nothing else of the nodes'
    c.DockerSpawner.volumes[os.environ["ECHOMQ_CLASSROOM_SOCKETS"]] = {"bind": "/run/echomq", "mode": "ro"}
c.DockerSpawner.mem_limit = os.environ.get("ECHOMQ_HUB_MEM_LIMIT", "2G")
c.DockerSpawner.cpu_limit = float(os.environ.get("ECHOMQ_HUB_CPU_LIMIT", "1.0"))
# the image's command is JupyterLab alone (Zero to JupyterHub replaces it too): run the hub's single-user server
c.DockerSpawner.extra_create_kwargs = {"entrypoint": ["/usr/local/bin/jupyterhub-singleuser"]}
c.DockerSpawner.cmd = [
    f"--ServerApp.root_dir={COURSE_DIR}",
    "--ServerApp.terminals_enabled=False",
    # kernel websockets with TCP_NODELAY: a widget's redraw is not held back (echomq_teach/hub/lab_server.py)
    "--ServerApp.kernel_websocket_connection_class=echomq_teach.hub.lab_server.NoDelayConnection",
    # kernels talk to the server over Unix sockets inside the container: on TCP they would listen
    # on the host's loopback, where any other student could subscribe to their output
    "--KernelManager.transport=ipc",
]
c.DockerSpawner.extra_host_config = {"cap_drop": ["ALL"], "security_opt": ["no-new-privileges"], "pids_limit": 512}
c.Spawner.ip = "127.0.0.1"
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 60
c.Spawner.http_timeout = 60
