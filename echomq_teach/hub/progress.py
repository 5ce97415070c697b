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

The store is ``ECHOMQ_PROGRESS_DB`` (``progress_store.ProgressStore``). A
student whose kernel never reported still has a row, marked "never reported":
the service lists the hub's users with its own token (``list:users``, names
only; admins and the readers named in ``ECHOMQ_PROGRESS_READERS`` left out) and
reads the roster file ``ECHOMQ_CLASSROOM_ROSTER`` when it is given one.
"""

from __future__ import annotations

import html
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from jupyterhub.services.auth import HubAuth, HubOAuth, HubOAuthCallbackHandler, HubOAuthenticated
from tornado import ioloop, web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ..classroom.roster import RosterError, read_roster
from .progress_store import BadVerdict, ProgressStore

SERVICE = "echomq-progress"
READ_SCOPE = f"custom:{SERVICE}:read"
REFRESH_S = 5
#: the service's own scopes: list the hub's users, and read nothing of theirs but the name (and admin flag)
SERVICE_SCOPES = ["list:users", "read:users:name"]
HUB_LIST_TIMEOUT_S = 3.0  # a slow hub costs the page its silent rows, never the page
HUB_LIST_PAGE = 200  # the hub's largest page
HUB_LIST_MAX_PAGES = 50  # 10 000 users: a bound on the loop, far past any class


@dataclass
class Known:
    """The students known apart from their verdicts, and what could not be read to know them."""

    names: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


async def hub_students(api_url: str, token: str, readers: set[str]) -> list[str]:
    """The hub's users that are students: not admins, not readers (page by page, bounded).

    Raises ``OSError`` or ``HTTPClientError`` (tornado's) when the hub does not answer in time.
    """
    client = AsyncHTTPClient()
    names: list[str] = []
    offset = 0
    for _ in range(HUB_LIST_MAX_PAGES):
        resp = await client.fetch(HTTPRequest(
            f"{api_url.rstrip('/')}/users?offset={offset}&limit={HUB_LIST_PAGE}",
            headers={"Authorization": f"token {token}", "Accept": "application/jupyterhub-pagination+json"},
            request_timeout=HUB_LIST_TIMEOUT_S,
        ))
        page = json.loads(resp.body)
        names += [u["name"] for u in page["items"] if not u.get("admin") and u["name"] not in readers]
        nxt = (page.get("_pagination") or {}).get("next")
        if not nxt:
            break
        offset = int(nxt["offset"])
    return sorted(set(names))


async def known_students(settings: dict[str, Any]) -> Known:
    """The hub's students and the roster file's names; a problem noted (not raised) for what fails."""
    known = Known()
    auth: HubAuth = settings["token_auth"]
    try:
        known.names += await hub_students(auth.api_url, auth.api_token, settings["readers"])
    except (OSError, HTTPClientError, ValueError, KeyError) as exc:
        known.problems.append(f"the hub's user list could not be read ({type(exc).__name__})")
    roster = settings.get("roster")
    if roster:
        try:
            known.names += [n for n in read_roster(roster) if n not in settings["readers"]]
        except (OSError, RosterError) as exc:
            known.problems.append(f"the roster could not be read ({exc})")
    known.names = sorted(set(known.names))
    return known


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
    async def get(self) -> None:
        self.reader()
        known = await known_students(self.settings)
        students, exercises, cells = self.store.grid(known.names)
        self.finish({
            "students": students,
            # on the roster or the hub, and no verdict from their kernel yet
            "silent": self.store.silent(known.names),
            "problems": known.problems,
            "exercises": exercises,
            "cells": {f"{s}\t{e}": c.label() for (s, e), c in cells.items()},
            "rates": {e: list(r) for e, r in self.store.solve_rates().items()},
            "stuck": [list(r) for r in self.store.stuck()],
        })


class CsvHandler(_Reader):
    @web.authenticated
    async def get(self) -> None:
        self.reader()
        known = await known_students(self.settings)
        self.set_header("Content-Type", "text/csv; charset=utf-8")
        self.set_header("Content-Disposition", 'attachment; filename="progress.csv"')
        self.finish(self.store.csv(known.names))


class PageHandler(_Reader):
    @web.authenticated
    async def get(self) -> None:
        self.reader()
        known = await known_students(self.settings)
        self.set_header("Cache-Control", "no-store")
        self.finish(render(self.store, known=known))


def render(store: ProgressStore, now: float | None = None, known: Known | None = None) -> str:
    """The page: the grid, each exercise's solve rate, who is stuck; it reloads itself every few seconds.

    ``known``: the students known apart from their verdicts; each one who never
    reported has a greyed row marked "never reported".
    """
    known = known or Known()
    students, exercises, cells = store.grid(known.names)
    silent = set(store.silent(known.names))
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
        if s in silent:
            body.append(f'<tr class="silent"><th>{e(s)} <span class="tag">never reported</span></th>'
                        f"{''.join(tds)}</tr>")
        else:
            body.append(f"<tr><th>{e(s)}</th>{''.join(tds)}</tr>")
    silent_line = (f"<p class=\"silent-list\">Never reported ({len(silent)}): {e(', '.join(sorted(silent)))}</p>"
                   if silent else "")
    problems = "".join(f'<p class="problem">{e(p)}</p>' for p in known.problems)
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
tr.silent th{{color:#777;font-weight:normal}} .tag{{font-size:.8em;background:#eee;border-radius:.3em;padding:0 .4em}}
.problem{{color:#a33}}
</style></head><body>
<h1>Who is where</h1>
<p>Updated {stamp}, every {REFRESH_S} s. Formative: each row is what that student's kernel reported.
<a href="grid.csv">CSV</a></p>{problems}
<h2>Stuck ({len(stuck)})</h2><ul class="stuck">{stuck_items}</ul>
<h2>Exercises</h2>{silent_line}
<table><tr><th>student</th>{head}</tr>{''.join(body)}
<tr class="rate"><th>solved / reported</th>{rate_row}</tr></table>
</body></html>"""


def configure(c: Any, state: str, public_url: str, port: int, readers: list[str], roster: str | None = None
              ) -> None:
    """Add the live view to a hub's config ``c``: the service, its scope, the readers' role, the spawn env.

    ``state`` is the hub's (root-only) state folder, where the store lives; ``public_url`` the hub's
    public URL, which each student's server reports to; ``readers`` the hub names who may read;
    ``roster`` the roster file, whose students have a row before they first sign in.
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
            "ECHOMQ_PROGRESS_READERS": ",".join(readers),
            **({"ECHOMQ_CLASSROOM_ROSTER": os.path.abspath(roster)} if roster else {}),
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
    # the service's own token lists the hub's users: a student who never reported still has a row
    c.JupyterHub.load_roles.append({"name": f"{SERVICE}-service", "scopes": SERVICE_SCOPES, "services": [SERVICE]})
    c.Spawner.environment.update({"ECHOMQ_PROGRESS_URL": f"{public_url.rstrip('/')}/services/{SERVICE}/api/verdicts"})


def make_app(store: ProgressStore, prefix: str, readers: set[str] | None = None, roster: str | None = None
             ) -> web.Application:
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
        cookie_secret=os.urandom(32), readers=readers or set(), roster=roster,
    )


def main() -> None:
    store = ProgressStore(os.environ["ECHOMQ_PROGRESS_DB"])
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/services/{SERVICE}/")
    url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:10101"))
    readers = {r for r in os.environ.get("ECHOMQ_PROGRESS_READERS", "").split(",") if r}
    app = make_app(store, prefix, readers, os.environ.get("ECHOMQ_CLASSROOM_ROSTER") or None)
    app.listen(url.port or 80, url.hostname or "127.0.0.1")
    ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
