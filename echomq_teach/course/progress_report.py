"""Report a check's verdict to the instructor's live view, when the kernel runs on the classroom hub.

The hub's spawner puts ``ECHOMQ_PROGRESS_URL`` (the service's ``api/verdicts``)
in each student's server environment, beside the ``JUPYTERHUB_API_TOKEN`` the
hub gives every server. With both set, each verdict goes to the service on a
daemon thread with a short timeout: the learner never waits for it, and a
service that is down or slow changes nothing they see (no output, no
traceback). Without them (outside a hub), nothing is sent at all.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
from typing import Any

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
    return {
        "exercise": key,
        "solved": bool(verdict),
        "tries": _TRIES[key],
        "hint": key in _HINTS,
        "finding": findings[0] if findings else "",
        "at": time.time(),
    }


def send(url: str, token: str, body: dict[str, Any], timeout: float = TIMEOUT_S) -> int | None:
    """POST one verdict; answers the HTTP status, or None when the service did not answer."""
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except Exception:  # noqa: BLE001 - down, refused, slow: the learner's check goes on unchanged
        return None


def report(key: str, verdict: Any) -> threading.Thread | None:
    """Send ``verdict`` in the background when on a hub; the thread (for tests), or None when not on one."""
    url = os.environ.get("ECHOMQ_PROGRESS_URL", "")
    token = os.environ.get("JUPYTERHUB_API_TOKEN", "")
    if not url or not token:
        return None
    body = payload(key, verdict)
    t = threading.Thread(target=send, args=(url, token, body), daemon=True, name="echomq-progress")
    t.start()
    return t
