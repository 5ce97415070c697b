"""Why a test of a built image cannot run here: no Docker engine, or the image not built (``None``: it can)."""

from __future__ import annotations

import os

from echomq_teach.errors import NodeError
from echomq_teach.nodes import container


def image_skip_reason(image: str, build: str = "bash docker/build-course-offline.sh") -> str | None:
    """The reason to skip, naming what to start or build; None when the engine answers and holds ``image``."""
    where = os.environ.get("DOCKER_HOST", "the default socket")
    try:
        client = container.engine()
    except NodeError:
        return f"no Docker engine answers at {where} (start one: tools/dockerd.sh start DIR)"
    try:
        container.image_info(client, image)
    except NodeError:
        return f"the image {image} is not built ({build})"
    finally:
        client.close()
    return None
