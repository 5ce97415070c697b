"""The instructor's live view: a JupyterHub-managed service (``python -m echomq_teach.hub.progress``).

The hub starts and stops it (``services`` with a ``command``, added by
``configure``) and gives it, in its environment, its URL, its prefix and its
own API token. Two doors:

- ``POST api/verdicts`` with ``Authorization: token <a report token>``: one
  verdict. A report token (``give_report_token``, made at each spawn) holds the
  one scope ``custom:echomq-progress:report`` and opens nothing else on the hub;
  a server's own token, which opens the student's server, is refused here. The
  student is the token's owner as the hub names it; a body with any other
  field (``student``, ``user``) is refused with 400 and nothing is written.
- ``GET`` the page, ``api/grid`` (JSON), ``grid.csv``, and ``DELETE
  api/students/<name>`` (one student's rows): hub OAuth (or a token), only
  with the scope ``custom:echomq-progress:read`` (the instructor's role);
  anyone else gets 403.

What it takes is bounded (``Bounds``): a report body over 4 KB is refused
(413) before it is read; only the exercise names the kit's registry holds
(read from it at start, so a new exercise is accepted once it lands) and only
finite numbers are taken; each student may report 30 times a minute (429
past that); a token the service has not seen is looked up at the hub at most
120 times a minute. Started as root, it becomes an unprivileged uid of its own
and caps its own data segment before it reads a byte.

Where it listens (``configure``'s ``mode``): ``"socket"`` (the classroom on
one host, docker/jupyterhub_config.py) takes the reports on a Unix socket, in a
folder mounted read-only into every student's container (no port anyone could
bind in its place), and serves the instructor on a port of the host's loopback
that the proxy reaches and no student's container can (they have no network:
hub/spawner.py). ``"tcp"`` (a hub whose servers run elsewhere: an existing hub,
Zero to JupyterHub) takes the reports through the hub's proxy on that port,
with the same bounds.

A student whose kernel never reported still has a row, marked "never
reported": the service lists the hub's users with its own token
(``list:users``, names only; admins and the readers named in
``ECHOMQ_PROGRESS_READERS`` left out) and the roster file read at start.
"""

from __future__ import annotations

import collections
import hashlib
import html
import json
import math
import os
import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from jupyterhub.services.auth import HubAuth, HubOAuth, HubOAuthCallbackHandler, HubOAuthenticated
from tornado import httpserver, ioloop, netutil, web

from ..classroom.roster import RosterError, read_roster
from .progress_store import BadVerdict, ProgressStore
from .sockets import socket_path, unix_url

SERVICE = "echomq-progress"
READ_SCOPE = f"custom:{SERVICE}:read"
#: the only scope of the token a student's kernel reports with
REPORT_SCOPE = f"custom:{SERVICE}:report"
REPORT_NOTE = f"{SERVICE} report"
REFRESH_S = 5
#: the service's own scopes: list the hub's users, and read nothing of theirs but the name (and admin flag)
SERVICE_SCOPES = ["list:users", "read:users:name"]
HUB_LIST_TIMEOUT_S = 3.0  # a slow hub costs the page its silent rows, never the page
HUB_LIST_PAGE = 200  # the hub's largest page
HUB_LIST_MAX_PAGES = 50  # 10 000 users: a bound on the loop, far past any class
#: where a student's container sees the reports' socket (socket mode)
REPORT_MOUNT = "/run/echomq-progress"
REPORT_SOCKET = "report.sock"
#: the uid the service becomes when the hub starts it as root: no account, no file but its own folders
DEFAULT_UID = 65533


@dataclass(frozen=True)
class Bounds:
    """What one request, one student and the whole service may take."""

    max_body: int = 4096
    reports_per_minute: int = 30
    lookups_per_minute: int = 120  # tokens not yet seen, asked of the hub
    memory_mb: int = 256  # the data segment (RLIMIT_DATA)
    token_cache_s: float = 300.0


@dataclass
class Known:
    """The students known apart from their verdicts, and what could not be read to know them."""

    names: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class Window:
    """Events per key in the last minute, for rate limits (a deque of times per key)."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self.seen: dict[str, collections.deque[float]] = {}

    def allow(self, key: str, now: float | None = None) -> bool:
        """True, and counted, when ``key`` has had fewer than ``per_minute`` events in the last 60 s."""
        now = time.monotonic() if now is None else now
        q = self.seen.setdefault(key, collections.deque())
        while q and now - q[0] > 60:
            q.popleft()
        if len(q) >= self.per_minute:
            return False
        q.append(now)
        return True


async def hub_students(api_url: str, token: str, readers: set[str]) -> list[str]:
    """The hub's users that are students: not admins, not readers (page by page, bounded).

    Through JupyterHub's own client, which also reaches a hub API on a Unix socket.
    Raises ``OSError`` (or the client's error) when the hub does not answer in time.
    """
    from jupyterhub.httpclient import fetch

    names: list[str] = []
    offset = 0
    for _ in range(HUB_LIST_MAX_PAGES):
        resp = await fetch(
            f"{api_url.rstrip('/')}/users?offset={offset}&limit={HUB_LIST_PAGE}",
            headers={"Authorization": f"token {token}", "Accept": "application/jupyterhub-pagination+json"},
            timeout=_timeout(HUB_LIST_TIMEOUT_S),
        )
        page = json.loads(await resp.text())
        names += [u["name"] for u in page["items"] if not u.get("admin") and u["name"] not in readers]
        nxt = (page.get("_pagination") or {}).get("next")
        if not nxt:
            break
        offset = int(nxt["offset"])
    return sorted(set(names))


def _timeout(seconds: float) -> Any:
    import aiohttp

    return aiohttp.ClientTimeout(total=seconds)


async def known_students(settings: dict[str, Any]) -> Known:
    """The hub's students and the roster's names (read at start); a problem noted (not raised) for what fails."""
    import aiohttp

    known = Known(problems=list(settings.get("roster_problems", [])))
    auth: HubAuth = settings["token_auth"]
    try:
        known.names += await hub_students(auth.api_url, auth.api_token, settings["readers"])
    except (OSError, aiohttp.ClientError, TimeoutError, ValueError, KeyError) as exc:
        known.problems.append(f"the hub's user list could not be read ({type(exc).__name__})")
    known.names += [n for n in settings.get("roster_names", []) if n not in settings["readers"]]
    known.names = sorted(set(known.names))
    return known


def roster_names(roster: str | None, readers: set[str]) -> tuple[list[str], list[str]]:
    """The roster's student names and the problems reading it (read once, before the service drops root)."""
    if not roster:
        return [], []
    try:
        return [n for n in read_roster(roster) if n not in readers], []
    except (OSError, RosterError) as exc:
        return [], [f"the roster could not be read ({exc})"]


def course_exercises() -> frozenset[str]:
    """Every exercise name the kit's registry holds (importing the exercises fills it)."""
    from ..course import exercises

    return frozenset(exercises.titles())


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a report may carry")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number (Infinity is not a number a report may carry)")
    return value


class _Base(web.RequestHandler):
    @property
    def store(self) -> ProgressStore:
        return self.settings["store"]

    def refuse(self, status: int, message: str) -> None:
        self.set_status(status)
        self.finish({"error": message})


@web.stream_request_body
class ReportHandler(_Base):
    """A student's kernel reports one verdict with its report token (read only once the body is small)."""

    def prepare(self) -> None:
        self.body = bytearray()
        bounds: Bounds = self.settings["bounds"]
        length = self.request.headers.get("Content-Length")
        if length is None or not length.isdigit() or int(length) > bounds.max_body:
            # refused on the headers alone: the body is never read into memory
            self.refuse(413, f"a report is a JSON body of at most {bounds.max_body} bytes with its Content-Length")

    def data_received(self, chunk: bytes) -> None:
        if not self._finished:
            self.body += chunk

    async def post(self) -> None:
        model = await self._owner()
        if model is None:
            return
        name = model["name"]
        if not self.settings["reports"].allow(name):
            self.set_header("Retry-After", "60")
            self.refuse(429, f"at most {self.settings['bounds'].reports_per_minute} reports a minute per student")
            return
        try:
            body = json.loads(bytes(self.body) or b"null", parse_constant=_no_constant, parse_float=_finite)
            self.store.record(name, body, self.settings["exercises"])
        except (ValueError, BadVerdict) as exc:
            self.refuse(400, str(exc))
            return
        self.set_status(204)

    async def _owner(self) -> dict[str, Any] | None:
        """The report token's owner, or None (the request already answered 403 or 429)."""
        auth: HubAuth = self.settings["token_auth"]
        token = auth.get_token(self, in_cookie=False)
        if not token:
            self.refuse(403, "a report token is required (ECHOMQ_PROGRESS_TOKEN)")
            return None
        key = hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()
        cache: dict[str, tuple[float, dict[str, Any]]] = self.settings["tokens"]
        now = time.monotonic()
        hit = cache.get(key)
        if hit is None or now - hit[0] > self.settings["bounds"].token_cache_s:
            if not self.settings["lookups"].allow("hub"):
                self.set_header("Retry-After", "60")
                self.refuse(429, "too many tokens the service has not seen: try again in a minute")
                return None
            model = await auth.user_for_token(token, use_cache=False, sync=False)
            if not model or model.get("kind", "user") != "user" or REPORT_SCOPE not in set(model.get("scopes", [])):
                self.refuse(403, f"a report token is required: one holding {REPORT_SCOPE} (never a server's token)")
                return None
            cache[key] = hit = (now, {"name": model["name"]})
        return hit[1]


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


class StudentHandler(_Reader):
    """``DELETE api/students/<name>``: one student's rows go, the class's stay."""

    @web.authenticated
    def delete(self, name: str) -> None:
        self.reader()
        self.finish({"student": name, "deleted": self.store.clear(name)})


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
                ("solved", "✓ solved") if c.solved else ("reference", c.label()) if c.reference
                else ("tried", c.label()))
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
td.solved{{background:#d6f5d6}} td.reference{{background:#dde6f7}} td.tried{{background:#ffe2b3}} td.none{{color:#999}}
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


# -- the hub's side: the service, its scopes, the students' report tokens ---------------------------------------
def store_folder(state: str | os.PathLike[str]) -> Path:
    """The service's own folder in the hub's state folder: its store."""
    return Path(state) / "progress"


def report_folder(state: str | os.PathLike[str]) -> Path:
    """The reports' socket folder (socket mode): mounted read-only at ``REPORT_MOUNT`` in every student's container."""
    return Path(state) / "progress-reports"


def _own_folder(path: Path, uid: int | None, mode: int) -> None:
    """``path`` made with ``mode`` unless it exists (then left as it is), and ``uid``'s when given (as root)."""
    if not path.is_dir():
        path.mkdir(mode=mode, parents=True)
        path.chmod(mode)  # whatever the umask
    if uid is not None:
        os.chown(path, uid, uid)


def configure(c: Any, state: str, public_url: str, port: int, readers: list[str], roster: str | None = None,
              *, mode: str = "tcp", uid: int | None = None, bounds: Bounds | None = None) -> Path | None:
    """Add the live view to a hub's config ``c``: the service, its scopes, the readers' role, the report tokens.

    ``state`` is the hub's (root-only) state folder, in which the service gets a
    folder of its own; ``public_url`` the hub's public URL; ``readers`` the hub
    names who may read; ``roster`` the roster file, whose students have a row
    before they first sign in. The instructor's view listens on 127.0.0.1:``port``
    (JupyterHub takes only an http URL for a service). ``mode="socket"``: the
    reports come in on a Unix socket, and the answer is the folder every
    student's container must mount read-only at ``REPORT_MOUNT`` (the spawner's
    business); ``mode="tcp"``: the reports come through the proxy, and the
    answer is None. ``uid``: the uid the service runs as when the hub is root
    (``DEFAULT_UID`` by default). Nothing is written here: the service makes its
    folders when it starts.
    """
    if mode not in ("socket", "tcp"):
        raise ValueError(f"mode must be 'socket' or 'tcp', got {mode!r}")
    bounds = bounds or Bounds()
    uid = DEFAULT_UID if uid is None else uid
    folder = store_folder(state)  # made by the service itself, as root, when it starts (main)
    env = {
        "ECHOMQ_PROGRESS_DB": str(folder / "progress.sqlite"),
        "ECHOMQ_PROGRESS_READERS": ",".join(readers),
        "ECHOMQ_PROGRESS_BOUNDS": json.dumps(bounds.__dict__),
        **({"ECHOMQ_CLASSROOM_ROSTER": os.path.abspath(roster)} if roster else {}),
        "ECHOMQ_PROGRESS_UID": str(uid),
        # the service imports the kit from this checkout, as the hub's config does
        "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    }
    mount: Path | None = None
    url = f"http://127.0.0.1:{port}"
    if mode == "socket":
        mount = report_folder(state)
        env["ECHOMQ_PROGRESS_REPORT_SOCKET"] = str(mount / REPORT_SOCKET)
        report_url = unix_url(f"{REPORT_MOUNT}/{REPORT_SOCKET}") + "/api/verdicts"
    else:
        report_url = f"{public_url.rstrip('/')}/services/{SERVICE}/api/verdicts"
    # append/update: the config's values may be lazy (unset yet) or lists set before this call
    c.JupyterHub.services.append({
        "name": SERVICE,
        "url": url,
        "command": [sys.executable, "-m", "echomq_teach.hub.progress"],
        "environment": env,
        "display": True,
        "oauth_client_allowed_scopes": [READ_SCOPE],
        # the hub's own service: no "authorize access?" page between the instructor and the view
        "oauth_no_confirm": True,
    })
    c.JupyterHub.custom_scopes.update({
        READ_SCOPE: {"description": "Read every student's exercise verdicts (the instructor's live view)."},
        REPORT_SCOPE: {"description": "Report one's own exercise verdicts to the instructor's live view."},
    })
    # every user may hold the report scope; only the token made at spawn holds nothing else
    c.JupyterHub.extra_user_scopes.add(REPORT_SCOPE)
    c.JupyterHub.load_roles.append({
        "name": "echomq-progress-reader",
        "scopes": [READ_SCOPE, f"access:services!service={SERVICE}"],
        "users": readers,
    })
    # the service's own token lists the hub's users: a student who never reported still has a row
    c.JupyterHub.load_roles.append({"name": f"{SERVICE}-service", "scopes": SERVICE_SCOPES, "services": [SERVICE]})
    c.Spawner.environment.update({"ECHOMQ_PROGRESS_URL": report_url})
    c.Spawner.pre_spawn_hook = give_report_token
    return mount


def give_report_token(spawner: Any) -> None:
    """The hub's pre-spawn hook: a fresh report token for the student's server (the last one revoked).

    It holds ``REPORT_SCOPE`` alone: stolen, it reports as its owner, and opens
    no server, no file and no API of the hub. The kit finds it in
    ``ECHOMQ_PROGRESS_TOKEN`` (``course/progress_report.py``).
    """
    user = spawner.user
    for old in [t for t in user.orm_user.api_tokens if t.note == REPORT_NOTE]:
        user.db.delete(old)
    user.db.commit()
    token = user.new_api_token(note=REPORT_NOTE, scopes=[REPORT_SCOPE])
    spawner.environment = {**spawner.environment, "ECHOMQ_PROGRESS_TOKEN": token}


# -- the service's process ---------------------------------------------------------------------------------------
def make_app(store: ProgressStore | None, prefix: str, readers: set[str] | None = None, roster: str | None = None,
             *, bounds: Bounds | None = None, reports: bool = True, view: bool = True,
             exercises: frozenset[str] | None = None) -> web.Application:
    """The service's handlers: ``view`` (the instructor's page, data, clearing) and ``reports`` (``api/verdicts``).

    The roster and the registry are read here, once; ``store`` may be set later
    (``app.settings["store"]``), once the process runs as the user that owns it.
    """
    readers = readers or set()
    names, problems = roster_names(roster, readers)
    handlers: list[Any] = []
    if reports:
        handlers.append((prefix + "api/verdicts", ReportHandler))
    if view:
        handlers += [
            (prefix + "api/grid", GridHandler),
            (prefix + "api/students/([a-z][a-z0-9_-]{0,23})", StudentHandler),
            (prefix + "grid.csv", CsvHandler),
            (prefix + "oauth_callback", HubOAuthCallbackHandler),
            (prefix + "?", PageHandler),
        ]
    bounds = bounds or Bounds()
    return web.Application(
        handlers, store=store, token_auth=HubAuth(access_scopes=set()), hub_auth=HubOAuth.instance(),
        cookie_secret=os.urandom(32), readers=readers, roster_names=names, roster_problems=problems,
        bounds=bounds, reports=Window(bounds.reports_per_minute), lookups=Window(bounds.lookups_per_minute),
        tokens={}, exercises=course_exercises() if exercises is None else exercises,
    )


def become(uid: int, memory_mb: int) -> None:
    """Drop root for ``uid`` (its own group, no others), then cap the data segment at ``memory_mb``."""
    if os.getuid() == 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    limit = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def _serve(app: web.Application, bounds: Bounds, where: str, mode: int = 0o600) -> None:
    server = httpserver.HTTPServer(
        app, max_body_size=bounds.max_body * 16, max_buffer_size=bounds.max_body * 16,
        idle_connection_timeout=30, body_timeout=10,
    )
    path = socket_path(where)
    if path:
        server.add_socket(netutil.bind_unix_socket(path, mode=mode))
    else:
        url = urlparse(where)
        server.listen(url.port or 80, url.hostname or "127.0.0.1")


def main() -> None:
    bounds = Bounds(**json.loads(os.environ.get("ECHOMQ_PROGRESS_BOUNDS", "{}")))
    readers = {r for r in os.environ.get("ECHOMQ_PROGRESS_READERS", "").split(",") if r}
    roster = os.environ.get("ECHOMQ_CLASSROOM_ROSTER") or None
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/services/{SERVICE}/")
    where = os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:10101")
    report_socket = os.environ.get("ECHOMQ_PROGRESS_REPORT_SOCKET") or None
    # as root: the roster (root's) and the registry are read, the sockets (or the port) bound and the
    # store opened (its folder's parent, the hub's state folder, is root's alone); then root is dropped
    # and memory capped: nothing after this opens a file by name
    root = os.getuid() == 0
    uid = int(os.environ.get("ECHOMQ_PROGRESS_UID", str(DEFAULT_UID))) if root else os.getuid()
    db = Path(os.environ["ECHOMQ_PROGRESS_DB"])
    _own_folder(db.parent, uid if root else None, 0o700)
    apps = [(make_app(None, prefix, readers, roster, bounds=bounds, reports=report_socket is None), where, 0o600)]
    if report_socket:
        _own_folder(Path(report_socket).parent, uid if root else None, 0o755)
        # every student's container connects to it (read-only mount): the token says who, never the socket
        apps.append((make_app(None, "/", readers, bounds=bounds, view=False), unix_url(report_socket), 0o666))
    store = ProgressStore(db)
    if root:
        os.chown(store.path, uid, uid)
    for app, at, mode in apps:
        app.settings["store"] = store
        _serve(app, bounds, at, mode)
    become(uid, bounds.memory_mb)
    ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
