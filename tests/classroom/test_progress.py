"""The instructor's live view (echomq_teach/hub/progress.py) on a real JupyterHub, without containers.

The hub runs as this user with the dummy authenticator and no spawner in use:
the service, its OAuth/token checks and its store are the real ones, started
and stopped by the hub, in its TCP mode (the one an existing hub or Zero to
JupyterHub uses; tests/classroom/test_hub.py runs the socket mode of a
classroom host). Tokens are made through the hub's API: each student's report
token holds the report scope alone, as the hub's pre-spawn hook makes it. The
kit's report (course/progress_report.py) is sent to it exactly as a student's
server would. Every bound the service keeps is tried here: the body's size,
the exercise names, non-finite numbers, the rate, the token's scope.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import live_view
import pytest
from browser_support import ARTIFACTS, chromium, expect, require_chromium
from conftest import terminate

from echomq_teach.course import exercises, progress_report
from echomq_teach.hub import progress
from echomq_teach.hub.progress_store import ProgressStore

requests = pytest.importorskip("requests")
pytest.importorskip("jupyterhub")

ROOT = Path(__file__).resolve().parents[2]
CHP = ROOT / "build" / "hub-proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
SERVICE = "/services/echomq-progress/"
START_LIMIT_S = 60  # a bound on waiting, never an assertion about speed
STUDENTS = ["ada", "bob", "cyd", "dee", "eli"]
#: a student who floods (and is then cleared): the others' rows stay as the other tests leave them
FLOODER = "max"
#: hub users whose kernels never report, and a roster name that never even signed in
QUIET = ["fay", "gus"]
ROSTER = [*STUDENTS, FLOODER, *QUIET, "hal"]

pytestmark = [pytest.mark.hub, pytest.mark.timeout(300)]


def _port() -> int:
    from browser_support import free_port

    return free_port()


CONFIG = """
import sys
sys.path.insert(0, {root!r})
from echomq_teach.hub import progress
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.JupyterHub.db_url = "sqlite:///{state}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{state}/cookie_secret"
c.JupyterHub.pid_file = "{state}/jupyterhub.pid"
c.ConfigurableHTTPProxy.command = [{chp!r}]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_port}"
c.ConfigurableHTTPProxy.pid_file = "{state}/proxy.pid"
c.JupyterHub.cleanup_proxy = True
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True
c.Authenticator.admin_users = {{"instructor"}}
c.JupyterHub.services = [{{"name": "test-admin", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "test-admin", "scopes": ["admin:users", "tokens", "list:users"],
                             "services": ["test-admin"]}}]
progress.configure(c, "{state}", "http://127.0.0.1:{port}", {service_port}, ["instructor"], roster={roster!r})
"""


class Hub:
    def __init__(self, tmp: Path) -> None:
        if not CHP.exists():
            pytest.skip("configurable-http-proxy is not installed (bash tools/install-hub.sh)")
        self.state = tmp / "state"
        self.state.mkdir(mode=0o700)
        self.port = _port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        roster = tmp / "roster.txt"
        roster.write_text("\n".join(ROSTER) + "\n")
        (tmp / "config.py").write_text(CONFIG.format(
            root=str(ROOT), port=self.port, hub_port=_port(), proxy_port=_port(), service_port=_port(),
            state=self.state, chp=str(CHP), token=self.token, roster=str(roster)))
        self.tmp = tmp
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        log = open(self.tmp / "hub.log", "ab")  # noqa: SIM115 - kept open for the hub's life
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("jupyterhub")), "-f", str(self.tmp / "config.py")],
            cwd=self.tmp, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_LIMIT_S
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.tmp / "hub.log").read_text()[-3000:]
            try:
                r = requests.get(self.url + SERVICE + "api/grid", timeout=2, allow_redirects=False)
                if r.status_code in (302, 403):  # the service answers: a login redirect for nobody
                    return
            except requests.RequestException:
                pass
            time.sleep(0.3)
        raise AssertionError("hub or service not up:\n" + (self.tmp / "hub.log").read_text()[-3000:])

    def stop(self) -> None:
        if self.proc is not None:
            terminate(self.proc)
        # a hub that exited on its own (a service it could not start) leaves its proxy: ended by its PID
        pid_file = self.state / "proxy.pid"
        if pid_file.exists():
            pid = int(pid_file.read_text().strip() or 0)
            if pid and Path(f"/proc/{pid}/cmdline").exists() and b"configurable-http-proxy" in Path(
                    f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGTERM)

    def api(self, method: str, path: str, **kw) -> requests.Response:
        r = requests.request(method, f"{self.url}/hub/api{path}", timeout=10,
                             headers={"Authorization": f"token {self.token}"}, **kw)
        r.raise_for_status()
        return r

    def user_token(self, name: str, scopes: list[str] | None = None) -> str:
        body = {"note": "test"} | ({"scopes": scopes} if scopes else {})
        return self.api("POST", f"/users/{name}/tokens", json=body).json()["token"]

    def service_pid(self) -> int:
        return live_view.service_pid(self.state)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    h = Hub(tmp_path_factory.mktemp("progress-hub"))
    try:
        h.start()  # inside the try: a hub that never got ready is stopped too
        h.api("POST", "/users", json={"usernames": [*STUDENTS, FLOODER, *QUIET, "instructor"]})
        # what the hub's pre-spawn hook gives each student's server: a token that can only report
        h.tokens = {s: h.user_token(s, [progress.REPORT_SCOPE]) for s in [*STUDENTS, FLOODER]}
        h.tokens["instructor"] = h.user_token("instructor")
        yield h
    finally:
        h.stop()


def _get(hub: Hub, who: str, path: str) -> requests.Response:
    return requests.get(hub.url + SERVICE + path, timeout=10,
                        headers={"Authorization": f"token {hub.tokens[who]}"}, allow_redirects=False)


def _post(hub: Hub, who: str, body: dict) -> requests.Response:
    return requests.post(hub.url + SERVICE + "api/verdicts", json=body, timeout=10,
                         headers={"Authorization": f"token {hub.tokens[who]}"})


def _rows(hub: Hub) -> list[tuple]:
    with sqlite3.connect(hub.state / "progress" / "progress.sqlite") as db:
        return db.execute("SELECT * FROM verdicts ORDER BY id").fetchall()


def _verdict(ex: str, solved: bool, tries: int, finding: str = "", hint: bool = False) -> dict:
    return {"exercise": ex, "solved": solved, "tries": tries, "hint": hint, "finding": finding}


def _raw_post(hub: Hub, who: str, raw: bytes) -> requests.Response:
    return requests.post(hub.url + SERVICE + "api/verdicts", data=raw, timeout=10,
                         headers={"Authorization": f"token {hub.tokens[who]}", "Content-Type": "application/json"})


def test_store_file_is_private_in_a_folder_of_the_services_own(hub):
    folder = progress.store_folder(hub.state)
    path = folder / "progress.sqlite"
    assert path.exists() and path.stat().st_mode & 0o777 == 0o600
    assert folder.stat().st_mode & 0o777 == 0o700
    if os.getuid() == 0:  # started as root by the hub, it runs as a uid of its own, which owns only its folder
        assert live_view.status(hub.service_pid())["Uid"].split() == [str(progress.DEFAULT_UID)] * 4
        assert path.stat().st_uid == folder.stat().st_uid == progress.DEFAULT_UID
        assert hub.state.stat().st_uid == 0 and (hub.state / "jupyterhub.sqlite").stat().st_uid == 0
    assert live_view.data_limit(hub.service_pid()) == progress.Bounds().memory_mb * 2**20  # its memory cap


def test_reports_land_under_the_tokens_owner_and_the_grid_shows_them(hub):
    assert _post(hub, "ada", _verdict("01.2", True, 1)).status_code == 204
    for n in (1, 2):
        assert _post(hub, "bob", _verdict("01.2", False, n, "the job is still in wait")).status_code == 204
    grid = _get(hub, "instructor", "api/grid")
    assert grid.status_code == 200, grid.text
    g = grid.json()
    assert {"ada", "bob"} <= set(g["students"])
    assert g["cells"]["ada\t01.2"] == "solved"
    assert g["cells"]["bob\t01.2"] == "tried 2"


def test_students_who_never_reported_have_a_row_marked_as_such(hub):
    g = _get(hub, "instructor", "api/grid").json()
    # the hub's users and the roster's names, less the instructor (an admin and the reader)
    assert set(g["students"]) >= {"ada", "bob", *QUIET, "hal"} and "instructor" not in g["students"]
    assert set(g["silent"]) >= {*QUIET, "hal"} and not {"ada", "bob"} & set(g["silent"])
    assert g["problems"] == []
    assert not [k for k in g["cells"] if k.split("\t")[0] in QUIET]  # a row, but no verdict in it
    page = _get(hub, "instructor", "").text
    assert page.count('<tr class="silent">') == len(g["silent"]) and "never reported" in page
    lines = _get(hub, "instructor", "grid.csv").text.splitlines()
    assert [line for line in lines if line.startswith("fay,")] == ["fay" + ",not started" * len(g["exercises"])]


def test_only_a_report_token_reports(hub):
    """A server's token (what the kit sent before) is refused; the report token opens nothing of the hub."""
    before = _rows(hub)
    server_like = hub.user_token("bob", ["access:servers!user=bob", "users:activity!user=bob"])
    r = requests.post(hub.url + SERVICE + "api/verdicts", json=_verdict("01.2", True, 1), timeout=10,
                      headers={"Authorization": f"token {server_like}"})
    assert r.status_code == 403 and progress.REPORT_SCOPE in r.json()["error"]
    assert _rows(hub) == before
    report = {"Authorization": f"token {hub.tokens['bob']}"}
    for path in ("/hub/api/users", "/user/bob/api/status", "/hub/api/users/bob/tokens", "/hub/api/users/ada"):
        resp = requests.get(hub.url + path, headers=report, timeout=10, allow_redirects=False)
        assert resp.status_code in (403, 404, 302), (path, resp.status_code)  # never 200: nothing to read
    # the one thing any token reads: its owner's own model, here without servers, tokens or groups
    own = requests.get(hub.url + "/hub/api/users/bob", headers=report, timeout=10).json()
    assert own["name"] == "bob" and not {"servers", "roles", "auth_state", "last_activity"} & set(own), own
    assert _get(hub, "bob", "api/grid").status_code == 403


def test_a_big_body_is_refused_before_it_is_read(hub):
    """A body past 4 KB is answered 413 on its headers; a 95 MB one does not grow the service's memory."""
    r = _raw_post(hub, "bob", b'{"exercise": "01.2", "finding": "' + b"x" * 5000 + b'"}')
    assert r.status_code == 413 and "at most 4096 bytes" in r.json()["error"]
    pid = hub.service_pid()
    before = live_view.peak_kb(pid)
    answers = []
    for _ in range(4):  # bounded: four bodies, each cut off after its first megabyte at most
        port = int(hub.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"POST " + SERVICE.encode() + b"api/verdicts HTTP/1.1\r\nHost: x\r\n"
                      b"Authorization: token " + hub.tokens["bob"].encode() + b"\r\n"
                      b"Content-Length: %d\r\n\r\n" % (95 * 2**20))
            try:
                for _ in range(16):
                    s.sendall(b"x" * 65536)
            except OSError:
                pass  # the service closed the connection: it took no more
            answers.append(s.recv(4096).split(b"\r\n")[0])
    # the service answers 413 and closes at once; the proxy, still sending the rest, may answer 503 for it
    assert set(answers) <= {b"HTTP/1.1 413 Request Entity Too Large", b"HTTP/1.1 503 Service Unavailable"}, answers
    assert live_view.peak_kb(pid) - before < 16 * 1024, (before, live_view.peak_kb(pid))  # not one body's worth


def test_only_the_courses_exercises_and_finite_numbers_are_taken(hub):
    before = _rows(hub)
    for ex in ("99.9", "x000001", '=HYPERLINK("http://x.invalid","y")'):
        r = _post(hub, "bob", _verdict(ex, False, 1))
        assert r.status_code == 400 and "not one of the course's exercises" in r.json()["error"], (ex, r.text)
    for raw, words in ((b'{"exercise": "01.2", "solved": false, "tries": 1, "at": NaN}', "NaN"),
                       (b'{"exercise": "01.2", "solved": false, "tries": 1, "at": Infinity}', "Infinity"),
                       (b'{"exercise": "01.2", "solved": false, "tries": 1e999}', "Infinity"),
                       (b'{"exercise": "01.2", "solved": false, "tries": 99999999}', "tries")):
        r = _raw_post(hub, "bob", raw)
        assert r.status_code == 400 and words in r.json()["error"], (raw, r.text)
    assert _rows(hub) == before
    assert set(exercises.titles()) >= {"01.2", "02.1", "03.1"}  # what the tests report: the registry's own


def test_the_csv_escapes_what_a_spreadsheet_would_run(hub):
    """A formula in the store (written before names were checked) reaches the CSV as text, never as a formula."""
    with sqlite3.connect(hub.state / "progress" / "progress.sqlite") as db:
        db.execute("INSERT INTO verdicts (student, exercise, solved, tries, hint, finding, at) "
                   "VALUES ('hal', '=HYPERLINK(\"http://x.invalid\",\"y\")', 0, 1, 0, '', ?)", (time.time(),))
    try:
        header = _get(hub, "instructor", "grid.csv").text.splitlines()[0]
        assert "'=HYPERLINK(" in header and ",=HYPERLINK" not in header
    finally:
        with sqlite3.connect(hub.state / "progress" / "progress.sqlite") as db:
            db.execute("DELETE FROM verdicts WHERE student = 'hal'")


def test_a_flood_is_cut_at_the_rate_and_one_student_is_cleared(hub):
    bounds = progress.Bounds()
    codes = [_post(hub, FLOODER, _verdict("02.1", False, n)).status_code for n in range(bounds.reports_per_minute + 5)]
    assert codes.count(204) == bounds.reports_per_minute and codes[-5:] == [429] * 5
    g = _get(hub, "instructor", "api/grid").json()
    assert g["cells"][f"{FLOODER}\t02.1"] == f"tried {bounds.reports_per_minute - 1}"
    others = [r for r in _rows(hub) if r[1] != FLOODER]
    r = requests.delete(hub.url + SERVICE + f"api/students/{FLOODER}", timeout=10,
                        headers={"Authorization": f"token {hub.tokens['bob']}"})
    assert r.status_code == 403  # a student clears nobody
    r = requests.delete(hub.url + SERVICE + f"api/students/{FLOODER}", timeout=10,
                        headers={"Authorization": f"token {hub.tokens['instructor']}"})
    assert r.status_code == 200 and r.json() == {"student": FLOODER, "deleted": bounds.reports_per_minute}
    assert [r for r in _rows(hub) if r[1] == FLOODER] == [] and [r for r in _rows(hub) if r[1] != FLOODER] == others


def test_a_report_naming_another_student_is_refused_and_writes_nothing(hub):
    before = _rows(hub)
    r = _post(hub, "bob", _verdict("01.2", True, 3) | {"student": "ada"})
    assert r.status_code == 400 and "student" in r.json()["error"]
    r = _post(hub, "bob", _verdict("01.2", "yes", 3))  # a bad field: named, nothing written
    assert r.status_code == 400 and "solved" in r.json()["error"]
    assert _rows(hub) == before
    r = requests.post(hub.url + SERVICE + "api/verdicts", json=_verdict("01.2", True, 1), timeout=10)
    assert r.status_code == 403  # no token: nobody
    assert _rows(hub) == before


def test_a_student_gets_403_on_page_and_data(hub):
    for path in ("", "api/grid", "grid.csv"):
        assert _get(hub, "cyd", path).status_code == 403, path
        assert _get(hub, "instructor", path).status_code == 200, path


def test_csv_is_the_grid(hub):
    g = _get(hub, "instructor", "api/grid").json()
    lines = _get(hub, "instructor", "grid.csv").text.splitlines()
    assert lines[0].split(",") == ["student", *g["exercises"]]
    for line, s in zip(lines[1:], g["students"], strict=True):
        cells = line.split(",")
        assert cells[0] == s
        assert cells[1:] == [g["cells"].get(f"{s}\t{e}", "not started") for e in g["exercises"]]


def test_stuck_list_names_several_recent_failures(hub):
    for n in (1, 2, 3, 4):
        _post(hub, "cyd", _verdict("02.1", False, n, "no row for the claimed id", hint=n > 2))
    stuck = _get(hub, "instructor", "api/grid").json()["stuck"]
    assert ["cyd", "02.1", 4, "no row for the claimed id"] in stuck
    assert not [r for r in stuck if r[0] == "bob"]  # two tries: not stuck yet


def test_the_kits_check_reports_from_a_hub_server_and_prints_the_same(hub, conn, monkeypatch, capsys):
    def buggy(conn, queue, *args):
        raise ValueError("not this way")

    plain = str(exercises.check("01.2", buggy, conn))
    out_plain = capsys.readouterr()
    before = len(_rows(hub))
    monkeypatch.setenv("ECHOMQ_PROGRESS_URL", hub.url + SERVICE + "api/verdicts")
    # a server's own token is never what the kit sends: with it alone, nothing goes
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", hub.user_token("dee"))
    monkeypatch.delenv("ECHOMQ_PROGRESS_TOKEN", raising=False)
    assert progress_report.report("01.2", exercises.Verdict("01.2 x", False, ["f"])) is None
    monkeypatch.setenv("ECHOMQ_PROGRESS_TOKEN", hub.tokens["dee"])
    reported = str(exercises.check("01.2", buggy, conn))
    assert reported == plain and capsys.readouterr() == out_plain
    deadline = time.monotonic() + 10
    while len(_rows(hub)) == before and time.monotonic() < deadline:
        time.sleep(0.1)
    row = _rows(hub)[-1]
    assert row[1:4] == ("dee", "01.2", 0) and "not this way" in row[6]
    # a dead service: the same verdict, the same (empty) output, no traceback
    monkeypatch.setenv("ECHOMQ_PROGRESS_URL", f"http://127.0.0.1:{_port()}/api/verdicts")
    dead = str(exercises.check("01.2", buggy, conn))
    assert dead == plain and capsys.readouterr() == out_plain


def test_send_to_a_dead_service_answers_none_quickly_enough_to_be_bounded():
    body = progress_report.payload("01.2", exercises.Verdict("01.2 x", False, ["f"]))
    assert progress_report.send(f"http://127.0.0.1:{_port()}/", "t", body, timeout=1) is None


def test_restart_keeps_the_rows_and_the_page_shows_them_in_a_browser(hub):
    require_chromium()
    for s, n in (("dee", 1), ("eli", 5)):
        _post(hub, s, _verdict("03.1", s == "dee", n, "the lock was not released"))
    grid_before = _get(hub, "instructor", "api/grid").json()
    hub.stop()
    hub.start()
    grid_after = _get(hub, "instructor", "api/grid").json()
    assert grid_after["cells"] == grid_before["cells"] and grid_after["students"] == grid_before["students"]
    assert ProgressStore(hub.state / "progress" / "progress.sqlite").rows()  # the same file, still read
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium() as browser:
        pg = browser.new_page(viewport={"width": 1100, "height": 700},
                              extra_http_headers={"Authorization": f"token {hub.tokens['instructor']}"})
        pg.goto(hub.url + SERVICE)
        pg.get_by_role("heading", name="Who is where").wait_for()
        text = pg.inner_text("body")
        assert "eli on 03.1: 5 tries — the lock was not released" in text
        assert "✓ solved" in text and "tried 5" in text
        # three who never reported and the one whose rows the instructor cleared: greyed rows, each
        # marked, and listed above the grid
        silent = pg.locator("tr.silent")
        assert silent.count() == 4 and all("never reported" in t for t in silent.all_inner_texts())
        assert f"Never reported (4): fay, gus, hal, {FLOODER}" in text
        pg.screenshot(path=str(ARTIFACTS / "progress-live-view.png"), full_page=True)


def _login(browser, hub: Hub, name: str):
    pg = browser.new_page(viewport={"width": 1100, "height": 700})
    pg.goto(hub.url + SERVICE)  # not logged in: the service sends the browser through the hub's OAuth
    pg.fill("input[name=username]", name)
    pg.fill("input[name=password]", "any password: the test's dummy authenticator")
    pg.click("input[type=submit], button[type=submit]")
    pg.wait_for_load_state()
    return pg


def test_the_page_through_hub_oauth_opens_for_the_instructor_only(hub):
    require_chromium()
    with chromium() as browser:
        pg = _login(browser, hub, "instructor")
        pg.get_by_role("heading", name="Who is where").wait_for()
        _post(hub, "ada", _verdict("04.1", True, 1))
        # the page reloads itself: the new row appears without a click (a bound on the wait, not a nap)
        expect(pg.locator("table")).to_contain_text("04.1", timeout=30_000)
        csv = pg.request.get(hub.url + SERVICE + "grid.csv")  # the page's own cookie, the CSV link
        assert csv.status == 200 and csv.text() == _get(hub, "instructor", "grid.csv").text
        student = _login(browser, hub, "eli")
        resp = student.request.get(hub.url + SERVICE)
        assert resp.status == 403 and "Who is where" not in resp.text()


def test_a_hub_that_does_not_answer_costs_the_silent_rows_not_the_page(tmp_path):
    import asyncio

    from jupyterhub.services.auth import HubAuth

    roster = tmp_path / "roster.txt"
    roster.write_text("ada\nzed\ninstructor-two\n")
    store = ProgressStore(tmp_path / "p.sqlite")
    store.record("ada", _verdict("01.2", True, 1))
    dead = HubAuth(api_url=f"http://127.0.0.1:{_port()}/hub/api", api_token="not-a-token")
    names, problems = progress.roster_names(str(roster), {"instructor-two"})
    settings = {"token_auth": dead, "readers": {"instructor-two"}, "roster_names": names, "roster_problems": problems}
    known = asyncio.run(progress.known_students(settings))
    # the roster's names still count (the reader left out); the hub's silence is said in one line
    assert known.names == ["ada", "zed"]
    assert len(known.problems) == 1 and "the hub's user list could not be read" in known.problems[0]
    page = progress.render(store, known=known)
    assert '<p class="problem">' in page and page.count('<tr class="silent">') == 1 and "zed" in page
    names, problems = progress.roster_names(str(tmp_path / "no-such-roster.txt"), set())
    settings.update(roster_names=names, roster_problems=problems)
    known = asyncio.run(progress.known_students(settings))
    assert known.names == [] and len(known.problems) == 2 and "the roster could not be read" in known.problems[0]
    assert store.grid(known.names)[0] == ["ada"]  # the reported rows stand on their own


def test_a_stage_passed_with_a_loaded_reference_shows_as_reference_never_solved(tmp_path):
    from echomq_teach.hub.progress_store import BadVerdict

    verdict = exercises.Verdict("02.2 x", True, [], reference=("02.2",))
    body = progress_report.payload("02.2", verdict)
    assert body["solved"] is False and body["reference"] is True
    # a store from before the reference column gains it; its old rows are no reference
    old = tmp_path / "old.sqlite"
    with sqlite3.connect(old) as db:
        db.execute("CREATE TABLE verdicts (id INTEGER PRIMARY KEY AUTOINCREMENT, student TEXT NOT NULL, exercise TEXT "
                   "NOT NULL, solved INTEGER NOT NULL, tries INTEGER NOT NULL, hint INTEGER NOT NULL, finding TEXT NOT "
                   "NULL, at REAL NOT NULL)")
        db.execute("INSERT INTO verdicts (student, exercise, solved, tries, hint, finding, at) "
                   "VALUES ('bo', '01.2', 1, 1, 0, '', 1.0)")
    store = ProgressStore(old)
    store.record("ann", body, ["02.2"])
    before = store.rows()
    with pytest.raises(BadVerdict, match="reference"):
        store.record("ann", {**body, "solved": True}, ["02.2"])
    assert store.rows() == before
    _, _, cells = store.grid()
    assert cells[("ann", "02.2")].label() == "reference" and not cells[("ann", "02.2")].solved
    assert cells[("bo", "01.2")].label() == "solved"
    assert "reference" in store.csv() and store.solve_rates()["02.2"] == (0, 1)
