# JupyterHub for a local classroom of The Queue (also what tests/test_hub.py runs).
#
# Everything listens on 127.0.0.1: the hub's public port, its internal API,
# the proxy's API and every student's server. Students' servers are local
# processes of the hub's own account (SimpleLocalProcessSpawner), each with a
# home of its own under the state folder, holding a copy of the course.
#
# Set-up (a), one node per student: nothing to configure; each kernel starts
# its own embedded node. Set-up (b), a shared node: provision the roster
# (python -m echomq_teach.classroom provision ...) and point
# ECHOMQ_CLASSROOM_CREDENTIALS at the file; each student's server then gets
# ECHOMQ_URL / ECHOMQ_NAMESPACE (/ ECHOMQ_NATIVE_URL) of their own.
#
# Environment (all optional):
#   ECHOMQ_HUB_DIR            state: database, cookie secret, pid files, homes (default ./hub-state)
#   ECHOMQ_HUB_PORT           public port (8000); ECHOMQ_HUB_API_PORT (8081); ECHOMQ_PROXY_API_PORT (8001)
#   ECHOMQ_HUB_AUTH           "shared" (default: SharedPasswordAuthenticator, ECHOMQ_HUB_PASSWORD,
#                             at least 8 characters) or "dummy" (any password: tests only)
#   ECHOMQ_HUB_USERS          comma-separated allowed users, and/or ECHOMQ_CLASSROOM_ROSTER (a roster
#                             file, read when it exists); neither: anyone with the password
#   ECHOMQ_CLASSROOM_CREDENTIALS  set-up (b): the provisioned credentials file
#   ECHOMQ_COURSE_DIR         notebooks copied into each new home (default: the repo's notebooks/)
#   ECHOMQ_CHP                configurable-http-proxy (default: PATH, then build/hub-proxy)
#   ECHOMQ_HUB_API_TOKEN      a token for the "echomq-admin" service (automation, the smoke test)
# `c` is the config object JupyterHub passes in
# ruff: noqa: F821
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

repo = Path(__file__).resolve().parent.parent
state = Path(os.environ.get("ECHOMQ_HUB_DIR", "hub-state")).resolve()
state.mkdir(parents=True, exist_ok=True)
state.chmod(0o700)
(state / "home").mkdir(exist_ok=True)

port = int(os.environ.get("ECHOMQ_HUB_PORT", "8000"))
hub_api_port = int(os.environ.get("ECHOMQ_HUB_API_PORT", "8081"))
proxy_api_port = int(os.environ.get("ECHOMQ_PROXY_API_PORT", "8001"))

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
if os.environ.get("ECHOMQ_HUB_AUTH", "shared") == "dummy":
    c.JupyterHub.authenticator_class = "dummy"
else:
    c.JupyterHub.authenticator_class = "shared-password"
    c.SharedPasswordAuthenticator.user_password = os.environ.get("ECHOMQ_HUB_PASSWORD", "")
users = {u.strip().lower() for u in os.environ.get("ECHOMQ_HUB_USERS", "").split(",") if u.strip()}
roster = os.environ.get("ECHOMQ_CLASSROOM_ROSTER")
if roster and Path(roster).exists():
    sys.path.insert(0, str(repo))
    from echomq_teach.roster import read_roster

    users |= set(read_roster(roster))
if users:
    c.Authenticator.allowed_users = users
else:
    c.Authenticator.allow_all = True

if os.environ.get("ECHOMQ_HUB_API_TOKEN"):
    c.JupyterHub.services = [{"name": "echomq-admin", "api_token": os.environ["ECHOMQ_HUB_API_TOKEN"]}]
    c.JupyterHub.load_roles = [
        {
            "name": "echomq-admin",
            "scopes": ["admin:users", "admin:servers", "tokens", "access:servers", "list:users"],
            "services": ["echomq-admin"],
        }
    ]

# -- each student's server ------------------------------------------------------------------------------
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(state / "home" / "{username}")
c.Spawner.ip = "127.0.0.1"
# the server of this Python (the kit and valkey-server's PATH come with it)
c.Spawner.cmd = [str(Path(sys.executable).with_name("jupyterhub-singleuser"))]
c.Spawner.env_keep = ["PATH", "LANG", "LC_ALL", "VIRTUAL_ENV", "JUPYTERHUB_SINGLEUSER_APP"]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 60
c.Spawner.http_timeout = 60
if os.getuid() == 0:
    c.Spawner.args = ["--allow-root"]

course = Path(os.environ.get("ECHOMQ_COURSE_DIR", repo / "notebooks"))


def pre_spawn(spawner) -> None:
    """Give a new home its own copy of the course and, in set-up (b), the student's node."""
    home = Path(spawner.home_dir)
    home.mkdir(parents=True, exist_ok=True)
    if course.is_dir():
        for nb in sorted(course.glob("*.ipynb")):
            if not (home / nb.name).exists():
                shutil.copy2(nb, home / nb.name)
    creds = os.environ.get("ECHOMQ_CLASSROOM_CREDENTIALS")
    if creds:
        sys.path.insert(0, str(repo))
        from echomq_teach.credentials import spawner_environment

        env = spawner_environment(spawner.user.name, creds)
        if not env:
            spawner.log.warning("%s is not in %s: they get an embedded node", spawner.user.name, creds)
        spawner.environment = {**spawner.environment, **env}


c.Spawner.pre_spawn_hook = pre_spawn
