"""The classroom's JupyterHub spawner: one container per student, from the offline course image.

Each student's server runs in a container of their own (``DockerSpawner``) on
the course image (``docker/build-course-offline.sh``): its own filesystem,
process table and environment, as uid 1000 (the image's learner) with no capabilities to gain, and
a memory and CPU cap. Their notebooks live in a named volume of their own,
``echomq-<name>``, filled from the image the first time. The containers share
the host's network (the engine runs without a bridge) and each server binds
127.0.0.1 on a port chosen at every start. A student's node credentials go
into that container's environment at spawn, read by the hub (as root) from
the root-only credentials file: they are never in a file the student can see
and never in another student's container.

Imported only by ``docker/jupyterhub_config.py``: the kit never needs JupyterHub.
"""

from __future__ import annotations

import os
from typing import Any

from dockerspawner import DockerSpawner
from traitlets import Unicode

from ..classroom.credentials import spawner_environment
from ..nodes.host import free_port

COURSE_DIR = "/home/learner/the-queue"


class ClassroomSpawner(DockerSpawner):
    """DockerSpawner on host networking, 127.0.0.1 only, with the student's classroom environment."""

    credentials_file = Unicode("", config=True, help="The provisioned credentials file (root-only)")

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

    async def start(self) -> Any:
        # host networking: a port of its own at every start (containers are removed when they stop)
        self.port = free_port()
        return await super().start()

    async def get_ip_and_port(self) -> tuple[str, int]:
        return "127.0.0.1", self.port
