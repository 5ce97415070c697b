"""The Jupyter server settings the course runs with: kernel websockets that send at once.

A click on a widget goes to the kernel and comes back as a burst of small
messages (each widget's new state). jupyter_server leaves Nagle's algorithm on
for the kernel's websocket, so after the first message of a burst the rest wait
for the browser's (delayed) acknowledgement: a stepper click that the kernel
answers in 5 ms showed in the browser 40 to 90 ms later. With TCP_NODELAY on
that socket the redrawn view shows in about 15 to 25 ms (bench/README.md).

Every Jupyter server the kit starts passes ``SERVER_ARGS`` (tools/course.sh, the
course images, the classroom's spawner, the browser tests).
"""

from __future__ import annotations

from typing import Any

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection


class NoDelayConnection(ZMQChannelsWebsocketConnection):
    """The default kernel websocket connection, with TCP_NODELAY set when it opens."""

    def connect(self) -> Any:
        self.websocket_handler.set_nodelay(True)
        return super().connect()


#: command-line settings for ``jupyter lab`` / ``jupyterhub-singleuser``
SERVER_ARGS = [f"--ServerApp.kernel_websocket_connection_class={__name__}.NoDelayConnection"]
