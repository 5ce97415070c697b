"""Report a check's verdict to the instructor's live view, when the kernel runs on the classroom hub.

The hub puts ``ECHOMQ_PROGRESS_URL`` (the service's ``api/verdicts``) and
``ECHOMQ_PROGRESS_TOKEN`` (a token that can do nothing but report:
``hub/progress.py``) in each student's server environment. With both set, each
verdict goes to the service on a daemon thread with a short timeout: the
learner never waits for it, and a service that is down or slow changes nothing
they see (no output, no traceback). Without them (outside a hub), nothing is
sent at all. The server's own ``JUPYTERHUB_API_TOKEN``, which opens the
student's server, is never sent anywhere.

On a classroom host the URL names a Unix socket mounted read-only into the
container (``http+unix://%2Frun%2Fechomq-progress%2Freport.sock/api/verdicts``):
no port another student could bind in the service's place.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import urllib.request
from typing import Any
from urllib.parse import unquote

TIMEOUT_S = 2.0
_TRIES: dict[str, int] = {}
_HINTS: set[str] = set()


def hint_asked(key: str) -> None:
    """Remember that this kernel asked for exercise ``key``'s hint (sent with its next verdict)."""
    _HINTS.add(key)


def payload(key: str, verdict: Any) -> dict[str, Any]:
    """The verdict as the service takes it; counts this kernel's tries of ``key``."""
    _TRIES[key] = _TRIES.get(key, 0) + 1
    findings = list(getattr(verdict, "findings", []))
    # a stage of your queue passed with a loaded reference: the live view shows "reference", never solved
    reference = bool(verdict) and bool(getattr(verdict, "reference", ()))
    return {
        "exercise": key,
        "solved": bool(verdict) and not reference,
        "reference": reference,
        "tries": _TRIES[key],
        "hint": key in _HINTS,
        "finding": findings[0] if findings else "",
    }


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over a Unix socket (``http+unix://<quoted path>/…``)."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


def _post_unix(url: str, data: bytes, headers: dict[str, str], timeout: float) -> int:
    netloc, _, path = url.partition("://")[2].partition("/")
    conn = _UnixConnection(unquote(netloc), timeout)
    try:
        conn.request("POST", "/" + path, body=data, headers=headers)
        return conn.getresponse().status
    finally:
        conn.close()


def send(url: str, token: str, body: dict[str, Any], timeout: float = TIMEOUT_S) -> int | None:
    """POST one verdict; answers the HTTP status, or None when the service did not answer."""
    data = json.dumps(body).encode()
    headers = {"Authorization": f"token {token}", "Content-Type": "application/json"}
    try:
        if url.startswith("http+unix://"):
            return _post_unix(url, data, headers, timeout)
        req = urllib.request.Request(url, data=data, method="POST", headers=headers)
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except Exception:  # noqa: BLE001 - down, refused, slow: the learner's check goes on unchanged
        return None


def report(key: str, verdict: Any) -> threading.Thread | None:
    """Send ``verdict`` in the background when on a hub; the thread (for tests), or None when not on one."""
    url = os.environ.get("ECHOMQ_PROGRESS_URL", "")
    token = os.environ.get("ECHOMQ_PROGRESS_TOKEN", "")
    if not url or not token:
        return None
    body = payload(key, verdict)
    t = threading.Thread(target=send, args=(url, token, body), daemon=True, name="echomq-progress")
    t.start()
    return t
