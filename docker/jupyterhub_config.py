# JupyterHub for a classroom of The Queue (also what tests/classroom/test_hub.py runs, unchanged).
#
# The hub runs as root on the classroom's host. Everything listens on
# 127.0.0.1: the hub's public port, its internal API, the proxy's API and every
# student's server (serve the room through a TLS reverse proxy of your own).
#
# - Who: echomq_teach.hub.authenticator.ClassroomAuthenticator (the native
#   authenticator): each student signs up with a password of their own, only
#   roster names may, and the instructor authorizes each sign-up at
#   /hub/authorize. The instructor (an admin) is created at start from a
#   root-only password file (`classroom init` writes instructor.password).
# - Where: echomq_teach.hub.spawner.ClassroomSpawner (DockerSpawner): one container
#   per student from the offline course image, on the engine at DOCKER_HOST,
#   with a memory and CPU cap and a named volume echomq-<name> for their work.
# - Their node: with ECHOMQ_CLASSROOM_CREDENTIALS (root-only), each student's
#   container gets ECHOMQ_URL / ECHOMQ_NAMESPACE (/ ECHOMQ_NATIVE_URL) of their
#   own in its environment; without it, each kernel starts embedded nodes.
#
# Environment:
#   ECHOMQ_HUB_DIR            state: database, cookie secret, pid files (default ./hub-state), made 0700
#   ECHOMQ_HUB_PORT           public port (8000); ECHOMQ_HUB_API_PORT (8081); ECHOMQ_PROXY_API_PORT (8001)
#   ECHOMQ_CLASSROOM_ROSTER   the roster file: only its students may sign up (required)
#   ECHOMQ_HUB_ADMIN          the instructor's hub name (default "instructor")
#   ECHOMQ_HUB_ADMIN_PASSWORD_FILE  the instructor's password, a root-only file (required)
#   ECHOMQ_CLASSROOM_CREDENTIALS    the provisioned credentials file (set-up b)
#   ECHOMQ_CLASSROOM_SOCKETS  the scripted node's socket folder (DIR/node/run), mounted read-only
#                             into each student's container at /run/echomq (set-up b)
#   ECHOMQ_COURSE_IMAGE       the course image (default echomq-course:local)
#   ECHOMQ_HUB_MEM_LIMIT      each student's container memory cap (default 2G); ECHOMQ_HUB_CPU_LIMIT (1.0)
#   ECHOMQ_CHP                configurable-http-proxy (default: PATH, then build/hub-proxy)
#   ECHOMQ_PROGRESS           0 turns the instructor's live view off; ECHOMQ_PROGRESS_PORT its port (8002)
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

port = int(os.environ.get("ECHOMQ_HUB_PORT", "8000"))
hub_api_port = int(os.environ.get("ECHOMQ_HUB_API_PORT", "8081"))
proxy_api_port = int(os.environ.get("ECHOMQ_PROXY_API_PORT", "8001"))

c.JupyterHub.bind_url = f"http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{hub_api_port}"
# the students' containers share the host's network: they reach the hub's API on loopback
c.JupyterHub.hub_connect_url = f"http://127.0.0.1:{hub_api_port}"
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
if os.environ.get("ECHOMQ_PROGRESS", "1") != "0":
    from echomq_teach.hub import progress

    progress.configure(
        c, str(state), f"http://127.0.0.1:{port}", int(os.environ.get("ECHOMQ_PROGRESS_PORT", "8002")), [admin],
        roster=required("ECHOMQ_CLASSROOM_ROSTER"),  # its students have a row before they first sign in
    )

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
c.DockerSpawner.network_name = "host"
c.DockerSpawner.use_internal_ip = True  # no port map (host networking has none): the spawner names the port
c.DockerSpawner.remove = True  # a stopped server's container goes; the student's volume stays
c.DockerSpawner.name_template = "echomq-{username}"
c.DockerSpawner.volumes = {"echomq-{username}": "/home/learner/the-queue"}
if os.environ.get("ECHOMQ_CLASSROOM_SOCKETS"):
    # the shared scripted node's only door: its socket folder, nothing else of the node's
    c.DockerSpawner.volumes[os.environ["ECHOMQ_CLASSROOM_SOCKETS"]] = {"bind": "/run/echomq", "mode": "ro"}
c.DockerSpawner.mem_limit = os.environ.get("ECHOMQ_HUB_MEM_LIMIT", "2G")
c.DockerSpawner.cpu_limit = float(os.environ.get("ECHOMQ_HUB_CPU_LIMIT", "1.0"))
# the image's command is JupyterLab alone (Zero to JupyterHub replaces it too): run the hub's single-user server
c.DockerSpawner.extra_create_kwargs = {"entrypoint": ["/usr/local/bin/jupyterhub-singleuser"]}
c.DockerSpawner.cmd = [
    "--ServerApp.root_dir=/home/learner/the-queue",
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
