"""A node named by a URL (``ECHOMQ_URL``, a classroom's shared node): the kit neither starts nor stops it."""

from __future__ import annotations

from typing import Any

from ..connector import address_from_url
from .node import Node
from .process import keep_secret


class RemoteNode(Node):
    """An existing node named by a URL (``ECHOMQ_URL``): the kit neither starts nor stops it."""

    def __init__(self, url: str, native: bool = False) -> None:
        self.url = url
        self.native = native
        self._address = address_from_url(url)
        keep_secret(self._address.get("password"))

    @property
    def address(self) -> dict[str, Any]:
        return dict(self._address)

    def __repr__(self) -> str:
        a = self._address
        where = a.get("unix_socket_path") or f"{a.get('host')}:{a.get('port')}"
        return f"<RemoteNode {where}>"
