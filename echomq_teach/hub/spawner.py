"""The classroom's JupyterHub spawner: one container per student, from the offline course image.

Each student's server runs in a container of their own (``DockerSpawner``) on
the course image (``docker/build-course-offline.sh``): its own filesystem,
process table, environment and network namespace (``network_mode: none``: a
loopback of its own, nothing else), as the image's learner (uid 1000) with no capabilities to gain,
and a memory and CPU cap. Their notebooks live in a named volume of their own,
``echomq-<name>``, filled from the image the first time.

Nothing reaches a student's container by a port, and it reaches nothing by
one: every door is a Unix socket in a folder mounted into it. The server
listens on ``/run/echomq-server/server.sock``, in a folder of the host's
(``<server_sockets>/<name>/``) mounted into this student's container alone;
the proxy reaches it through a port the hub holds for that student for the
hub's whole life (``relay.py``), so a server that dies leaves neither a free
port nor a socket anyone else could bind. The hub's API (relayed to a socket),
the shared nodes and the live view's reports come in the same way, read-only
(docker/jupyterhub_config.py).

A student's node credentials go into that container's environment at spawn,
read by the hub (as root) from the root-only credentials file: they are never
in a file the student can see and never in another student's container.

Imported only by ``docker/jupyterhub_config.py``: the kit never needs JupyterHub.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dockerspawner import DockerSpawner
from traitlets import Unicode

from ..classroom.credentials import spawner_environment
from . import relay

COURSE_DIR = "/home/learner/the-queue"
#: where a student's container has its server's socket folder
SERVER_DIR = "/run/echomq-server"
SERVER_SOCKET = "server.sock"
#: the port jupyter_server takes as "none given": with ``--ServerApp.sock`` any other one makes it exit
NOMINAL_PORT = 8888


class ClassroomSpawner(DockerSpawner):
    """DockerSpawner with no network, the server on a Unix socket, and the student's classroom environment."""

    credentials_file = Unicode("", config=True, help="The provisioned credentials file (root-only)")
    server_sockets = Unicode(
        "", config=True, help="A root-only host folder; each student's server socket lives in <it>/<name>/",
    )
    hub_socket = Unicode(
        "", config=True, help="Where the hub's API is relayed to a socket (its folder mounted into every container)",
    )

    def _student_env(self) -> dict[str, str]:
        path = self.credentials_file or os.environ.get("ECHOMQ_CLASSROOM_CREDENTIALS", "")
        env = spawner_environment(self.user.name, path) if path else {}
        if path and not env:
            self.log.warning("%s is not in %s: their kernels start embedded nodes", self.user.name, path)
        return env

    def get_env(self) -> dict[str, str]:
        env = super().get_env()
        env.update(self._student_env())
        return env

    def server_folder(self) -> Path:
        """This student's socket folder on the host."""
        if not self.server_sockets:
            raise ValueError("ClassroomSpawner.server_sockets is not set (docker/jupyterhub_config.py sets it)")
        return Path(self.server_sockets) / self.user.name

    def get_args(self) -> list[str]:
        return [*super().get_args(), f"--ServerApp.sock={SERVER_DIR}/{SERVER_SOCKET}"]

    async def start(self) -> Any:
        folder = self.server_folder()
        sock = folder / SERVER_SOCKET
        if self.hub_socket:
            await relay.serve_hub_api(self.hub_socket, self.hub.ip or "127.0.0.1", self.hub.port)
        Path(self.server_sockets).mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
        # the container's user (whichever uid the image runs as) binds the socket; only this
        # student's container mounts the folder, and its parent is root's alone
        folder.chmod(0o777)
        sock.unlink(missing_ok=True)  # a dead server's socket: only this student's next server replaces it
        self.volumes = {**self.volumes, str(folder): {"bind": SERVER_DIR, "mode": "rw"}}
        held = await relay.serve_student(self.user.name, sock)  # this student's, for the hub's whole life
        self.port = NOMINAL_PORT  # inside the container nothing listens on it: JUPYTERHUB_SERVICE_URL must name one
        await super().start()
        return "127.0.0.1", held

    async def get_ip_and_port(self) -> tuple[str, int]:
        return "127.0.0.1", relay.student_port(self.user.name) or NOMINAL_PORT
