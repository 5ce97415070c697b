"""The instructor's live view: a JupyterHub-managed service (``python -m echomq_teach.hub.progress``).

The hub starts and stops it (``services`` with a ``command`` in
``docker/jupyterhub_config.py``) and gives it, in its environment, its URL,
its prefix and its own API token. Two doors:

- ``POST <prefix>api/verdicts`` with ``Authorization: token <the student's hub
  token>``: one verdict. The student is the token's owner as the hub names it;
  a body with any other field (``student``, ``user``) is refused with 400 and
  nothing is written.
- ``GET <prefix>`` (the page), ``<prefix>api/grid`` (JSON) and
  ``<prefix>grid.csv``: hub OAuth (or a token), and only for a token holding the
  scope ``custom:echomq-progress:read`` (the instructor's role); anyone else
  gets 403.

The store is ``ECHOMQ_PROGRESS_DB`` (``progress_store.ProgressStore``).
"""

from __future__ import annotations

import html
import json
import os
import time
from typing import Any
from urllib.parse import urlparse

from jupyterhub.services.auth import HubAuth, HubOAuth, HubOAuthCallbackHandler, HubOAuthenticated
from tornado import ioloop, web

from .progress_store import BadVerdict, ProgressStore

SERVICE = "echomq-progress"
READ_SCOPE = f"custom:{SERVICE}:read"
REFRESH_S = 5


class _Base(web.RequestHandler):
    @property
    def store(self) -> ProgressStore:
        return self.settings["store"]


class ReportHandler(_Base):
    """A student's kernel reports one verdict with the student's own token."""

    async def post(self) -> None:
        auth: HubAuth = self.settings["token_auth"]
        token = auth.get_token(self, in_cookie=False)
        model = await auth.user_for_token(token, sync=False) if token else None
        if not model or model.get("kind", "user") != "user":
            raise web.HTTPError(403, "a student's own hub token is required")
        try:
            body = json.loads(self.request.body or b"null")
            self.store.record(model["name"], body)
        except (ValueError, BadVerdict) as exc:
            self.set_status(400)
            self.finish({"error": str(exc)})
            return
        self.set_status(204)


class _Reader(HubOAuthenticated, _Base):
    def reader(self) -> None:
        user = self.current_user
        if not user or READ_SCOPE not in set(user.get("scopes", [])):
            raise web.HTTPError(403, f"the instructor's view needs the scope {READ_SCOPE}")


class GridHandler(_Reader):
    @web.authenticated
    def get(self) -> None:
        self.reader()
        students, exercises, cells = self.store.grid()
        self.finish({
            "students": students,
            "exercises": exercises,
            "cells": {f"{s}\t{e}": c.label() for (s, e), c in cells.items()},
            "rates": {e: list(r) for e, r in self.store.solve_rates().items()},
            "stuck": [list(r) for r in self.store.stuck()],
        })


class CsvHandler(_Reader):
    @web.authenticated
    def get(self) -> None:
        self.reader()
        self.set_header("Content-Type", "text/csv; charset=utf-8")
        self.set_header("Content-Disposition", 'attachment; filename="progress.csv"')
        self.finish(self.store.csv())


class PageHandler(_Reader):
    @web.authenticated
    def get(self) -> None:
        self.reader()
        self.set_header("Cache-Control", "no-store")
        self.finish(render(self.store))


def render(store: ProgressStore, now: float | None = None) -> str:
    """The page: the grid, each exercise's solve rate, who is stuck; it reloads itself every few seconds."""
    students, exercises, cells = store.grid()
    rates = store.solve_rates()
    e = html.escape
    head = "".join(f"<th>{e(x)}</th>" for x in exercises)
    body = []
    for s in students:
        tds = []
        for x in exercises:
            c = cells.get((s, x))
            cls, label = ("none", "not started") if c is None else (
                ("solved", "✓ solved") if c.solved else ("tried", c.label()))
            tds.append(f'<td class="{cls}" title="{e(c.last_finding) if c else ""}">{e(label)}</td>')
        body.append(f"<tr><th>{e(s)}</th>{''.join(tds)}</tr>")
    rate_row = "".join(f"<td>{r[0]}/{r[1]}</td>" for r in (rates[x] for x in exercises))
    stuck = store.stuck(now) or []
    stuck_items = "".join(
        f"<li><b>{e(s)}</b> on <b>{e(x)}</b>: {n} tries — {e(f)}</li>" for s, x, n, f in stuck
    ) or "<li>nobody right now</li>"
    stamp = time.strftime("%H:%M:%S", time.localtime(time.time() if now is None else now))
    return f"""<!doctype html><html><head><meta charset="utf-8">
<meta http-equiv="refresh" content="{REFRESH_S}"><title>The Queue · who is where</title>
<style>
body{{font:16px system-ui,sans-serif;margin:1.5em;color:#222}}
table{{border-collapse:collapse}} th,td{{border:1px solid #ccc;padding:.4em .8em;text-align:left}}
td.solved{{background:#d6f5d6}} td.tried{{background:#ffe2b3}} td.none{{color:#999}}
tr.rate td{{font-weight:bold}} .stuck li{{margin:.3em 0}} h2{{margin-top:1.2em}}
</style></head><body>
<h1>Who is where</h1>
<p>Updated {stamp}, every {REFRESH_S} s. Formative: each row is what that student's kernel reported.
<a href="grid.csv">CSV</a></p>
<h2>Stuck ({len(stuck)})</h2><ul class="stuck">{stuck_items}</ul>
<h2>Exercises</h2>
<table><tr><th>student</th>{head}</tr>{''.join(body)}
<tr class="rate"><th>solved / reported</th>{rate_row}</tr></table>
</body></html>"""


def configure(c: Any, state: str, public_url: str, port: int, readers: list[str]) -> None:
    """Add the live view to a hub's config ``c``: the service, its scope, the readers' role, the spawn env.

    ``state`` is the hub's (root-only) state folder, where the store lives; ``public_url`` the hub's
    public URL, which each student's server reports to; ``readers`` the hub names who may read.
    """
    import sys

    # append/update: the config's values may be lazy (unset yet) or lists set before this call
    c.JupyterHub.services.append({
        "name": SERVICE,
        "url": f"http://127.0.0.1:{port}",
        "command": [sys.executable, "-m", "echomq_teach.hub.progress"],
        # the service imports the kit from this checkout, as the hub's config does
        "environment": {
            "ECHOMQ_PROGRESS_DB": os.path.join(state, "progress.sqlite"),
            "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        },
        "display": True,
        "oauth_client_allowed_scopes": [READ_SCOPE],
        # the hub's own service: no "authorize access?" page between the instructor and the view
        "oauth_no_confirm": True,
    })
    c.JupyterHub.custom_scopes.update({
        READ_SCOPE: {"description": "Read every student's exercise verdicts (the instructor's live view)."}
    })
    c.JupyterHub.load_roles.append({
        "name": "echomq-progress-reader",
        "scopes": [READ_SCOPE, f"access:services!service={SERVICE}"],
        "users": readers,
    })
    c.Spawner.environment.update({"ECHOMQ_PROGRESS_URL": f"{public_url.rstrip('/')}/services/{SERVICE}/api/verdicts"})


def make_app(store: ProgressStore, prefix: str) -> web.Application:
    token_auth = HubAuth(access_scopes=set())
    oauth = HubOAuth.instance()
    handlers: list[Any] = [
        (prefix + "api/verdicts", ReportHandler),
        (prefix + "api/grid", GridHandler),
        (prefix + "grid.csv", CsvHandler),
        (prefix + "oauth_callback", HubOAuthCallbackHandler),
        (prefix + "?", PageHandler),
    ]
    return web.Application(
        handlers, store=store, token_auth=token_auth, hub_auth=oauth,
        cookie_secret=os.urandom(32),
    )


def main() -> None:
    store = ProgressStore(os.environ["ECHOMQ_PROGRESS_DB"])
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/services/{SERVICE}/")
    url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:10101"))
    app = make_app(store, prefix)
    app.listen(url.port or 80, url.hostname or "127.0.0.1")
    ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
