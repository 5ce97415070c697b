"""Classroom set-up (b) on a real node: one ACL user per student, each namespaced.

Student A must get NOPERM on B's keys, on writing the brand and on every
flush, while A's own lifecycle runs through the kit with A's environment.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import attacks
import pytest
import redis

from echomq_teach import jobs, keyspace, scripts, snapshots, start_node
from echomq_teach.classroom import cli as classroom
from echomq_teach.classroom import compose, credentials, provision, roster
from echomq_teach.connector import address_from_url, make_client
from echomq_teach.errors import EchoMQError, NodeError
from echomq_teach.nodes import valkey
from echomq_teach.nodes.host import free_port
from echomq_teach.nodes.local import LocalNode
from echomq_teach.nodes.remote import RemoteNode

ROOT = Path(__file__).resolve().parents[2]


#: the classroom's limits, with a short script bound so the busy test is quick
LIMITS = {**compose.protection(maxmemory="256mb", maxclients=200), "busy-reply-threshold": "200"}


@pytest.fixture(scope="module")
def shared():
    """A scripted shared node with the classroom's limits; alice and bob provisioned from a CSV roster."""
    node = LocalNode(extra_config={**LIMITS, **compose.cluster_mode(bus_port=free_port())})
    admin = node.client()
    yield node, admin
    admin.close()
    node.stop()


@pytest.fixture(scope="module")
def students(shared, tmp_path_factory):
    node, admin = shared
    roster = tmp_path_factory.mktemp("roster") / "roster.csv"
    roster.write_text("name,email\nAlice,a@example.invalid\nbob,b@example.invalid\n")
    return {s.name: s for s in provision.provision(admin, roster)}


def as_student(monkeypatch, student: credentials.Student) -> None:
    """This process now has the student's kernel environment."""
    for k, v in student.env.items():
        monkeypatch.setenv(k, v)


def raw(student: credentials.Student) -> redis.Redis:
    return make_client(address_from_url(student.url))


# -- the roster ------------------------------------------------------------------------------------
def test_roster_plain_and_csv(tmp_path):
    plain = tmp_path / "r.txt"
    plain.write_text("# week 1\nalice\n\nBob\n  carol_2  \n")
    assert roster.read_roster(plain) == ["alice", "bob", "carol_2"]
    csv_file = tmp_path / "r.csv"
    csv_file.write_text('username,full name\nalice,"Alice A."\ndan-x,Dan\n')
    assert roster.read_roster(csv_file) == ["alice", "dan-x"]


@pytest.mark.parametrize(
    "text, words",
    [
        ("alice\nal.ice\n", "no dots"),
        ("alice\nALICE\n", "listed twice"),
        ("default\n", "reserved"),
        ("# nobody\n\n", "no student names"),
        ("a{b}\n", "not a usable"),
    ],
)
def test_roster_refusals_name_the_line(text, words):
    with pytest.raises(roster.RosterError, match=words):
        roster.parse_roster(text)


def test_namespace_goes_inside_the_hashtag(monkeypatch):
    monkeypatch.setenv("ECHOMQ_NAMESPACE", "alice")
    assert keyspace.base("orders") == "emq:{alice.orders}:"
    assert keyspace.base("alice.orders") == "emq:{alice.orders}:"  # already carried: left alone
    assert keyspace.queue_of(keyspace.job_key("orders", "JOB1")) == "alice.orders"
    monkeypatch.delenv("ECHOMQ_NAMESPACE")
    assert keyspace.base("orders") == "emq:{orders}:"


# -- what a student may not do ------------------------------------------------------------------------
def test_a_gets_noperm_on_bs_keys(shared, students, monkeypatch):
    node, admin = shared
    alice, bob = students["alice"], students["bob"]
    as_student(monkeypatch, bob)
    bconn = start_node().connector()
    bid = jobs.enqueue(bconn, "orders", "bob's job")
    bkeys = [
        keyspace.queue_key("orders", "pending"),
        keyspace.job_key("orders", bid),
    ]
    assert bkeys[0] == "emq:{bob.orders}:pending"
    bconn.close()

    a = raw(alice)
    for cmd in (
        ("ZRANGE", bkeys[0], 0, -1),
        ("HGETALL", bkeys[1]),
        ("EXISTS", bkeys[1]),
        ("ZADD", bkeys[0], 0, "JOBintruder"),
        ("DEL", bkeys[1]),
        ("HSET", bkeys[1], "state", "dead"),
    ):
        with pytest.raises(redis.exceptions.NoPermissionError):
            a.execute_command(*cmd)
    # the kit's scripts (loaded by provision) check every key they touch, declared or built inside
    claim2 = scripts.load("claim2")
    with pytest.raises(redis.exceptions.NoPermissionError, match="access a key"):
        a.evalsha(claim2.sha, 3, bkeys[0], "emq:{bob.orders}:active", "emq:{bob.orders}:", 1000)
    snap = scripts.load("snapshot")
    with pytest.raises(redis.exceptions.NoPermissionError, match="access a key"):
        a.evalsha(snap.sha, 1, "emq:{bob.orders}:")
    # through the kit, "bob.orders" is just a queue of alice's own
    as_student(monkeypatch, alice)
    assert keyspace.base("bob.orders") == "emq:{alice.bob.orders}:"
    a.close()
    assert admin.zrange(bkeys[0], 0, -1) == [bid]  # untouched


def test_a_reads_but_cannot_write_the_brand(shared, students):
    _, admin = shared
    a = raw(students["alice"])
    assert a.get(keyspace.VERSION_KEY) == keyspace.BRAND_WIRE4
    for cmd in (
        ("SET", keyspace.VERSION_KEY, keyspace.BRAND_WIRE6),
        ("SET", keyspace.VERSION_KEY, keyspace.BRAND_WIRE4, "NX"),
        ("DEL", keyspace.VERSION_KEY),
        ("EVAL", "return redis.call('SET', KEYS[1], 'x')", 1, keyspace.VERSION_KEY),  # no script of her own
    ):
        with pytest.raises(redis.exceptions.NoPermissionError):
            a.execute_command(*cmd)
    a.close()
    assert admin.get(keyspace.VERSION_KEY) == keyspace.BRAND_WIRE4


@pytest.mark.parametrize(
    "cmd",
    [
        ("FLUSHALL",),
        ("FLUSHDB",),
        ("SCRIPT", "FLUSH"),
        ("SCRIPT", "LOAD", "return 1"),
        ("EVAL", "return 1", "0"),
        ("EVAL_RO", "return 1", "0"),
        ("FUNCTION", "LOAD", "#!lua name=mine\nserver.register_function('f', function() return 1 end)"),
        ("FCALL", "f", "0"),
        ("FUNCTION", "FLUSH"),
        ("FUNCTION", "LIST"),
        ("CONFIG", "GET", "requirepass"),
        ("CONFIG", "SET", "appendonly", "yes"),
        ("MODULE", "LIST"),
        ("KEYS", "*"),
        ("DEBUG", "SLEEP", "0"),
        ("ACL", "LIST"),
        ("SHUTDOWN",),
        ("SCRIPT", "KILL"),
        ("FUNCTION", "KILL"),
        ("CLIENT", "LIST"),
        ("CLIENT", "KILL", "USER", "bob"),
        ("CLIENT", "PAUSE", "1000"),
        ("CLIENT", "NO-EVICT", "on"),
        ("MONITOR",),
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_a_may_not_flush_or_reconfigure(shared, students, cmd):
    _, admin = shared
    before = admin.dbsize()
    a = raw(students["alice"])
    with pytest.raises(redis.exceptions.NoPermissionError):
        a.execute_command(*cmd)
    a.close()
    assert admin.dbsize() == before
    assert admin.ping()


def test_the_shared_node_runs_the_pinned_release(shared):
    _, admin = shared
    version = admin.info("server")["valkey_version"]
    assert version == valkey.PINNED and valkey.known_crashes(version) == []


def test_the_three_inputs_that_broke_8_0_1_are_refused(shared, students):
    """CVE-2025-46817, -32023 and -46818 sent by alice, as she would: each refused, bob's data whole.

    The two that need a script of her own never run (EVAL is denied to students); the
    release itself refuses them too, as the instructor's own scripts show.
    """
    _, admin = shared
    a, b = raw(students["alice"]), raw(students["bob"])
    row, mark = "emq:{bob.cve}:job:1", "emq:{bob.cve}:mark"
    b.hset(row, "payload", "bob's payload")
    run_id = admin.info("server")["run_id"]
    try:
        no_eval = "no permissions to run the 'eval' command"
        assert no_eval in attacks.unpack_overflow(a)["error"]
        assert "too many results to unpack" in attacks.unpack_overflow(admin)["error"]
        hll = attacks.hll_overflow(a, "emq:{alice.cve}:hll1", "emq:{alice.cve}:hll2")
        assert all(str(v).startswith("error: INVALIDOBJ") for v in hll.values()), hll
        assert no_eval in attacks.metatable_plant(a, row, mark)["error"]
        assert "readonly table" in attacks.metatable_plant(admin, row, mark)["error"]
        # bob runs the kit's scripts: nothing of alice's runs inside them, and his row is whole
        rows = b.evalsha(scripts.load("snapshot").sha, 1, "emq:{bob.cve}:")[6]
        assert rows == [row, ["payload", "bob's payload"]]
        assert no_eval in attacks.metatable_loot(a)["error"] and admin.exists(mark) == 0
        assert admin.info("server")["run_id"] == run_id, "the node is the same process: it never went down"
    finally:
        admin.delete(row, mark)
        a.close()
        b.close()


def test_the_default_user_needs_the_admin_password(shared):
    node, _ = shared
    anon = make_client({"host": "127.0.0.1", "port": node.port})
    with pytest.raises(redis.exceptions.AuthenticationError):
        anon.ping()
    anon.close()


# -- what a student can do ------------------------------------------------------------------------------
def test_a_runs_the_lifecycle_through_the_kit(shared, students, monkeypatch):
    _, admin = shared
    as_student(monkeypatch, students["alice"])
    node = start_node()
    assert isinstance(node, RemoteNode)
    conn = node.connector()  # the node is already branded: the connector only reads the brand
    assert conn.wire == 4
    q = f"life{os.getpid()}"

    jid = jobs.enqueue(conn, q, "payload")
    c = jobs.claim(conn, q, 30_000)
    assert c is not None and c.id == jid and c.attempts == 1
    assert jobs.complete(conn, q, c.id, c.attempts) == jobs.OK
    assert jobs.row(conn, q, jid) == {}

    # retry, then promote once the run-at has passed
    jid = jobs.enqueue(conn, q, "flaky")
    c = jobs.claim(conn, q, 30_000)
    assert jobs.retry(conn, q, c.id, c.attempts, "boom", delay_ms=1) == jobs.SCHEDULED
    time.sleep(0.01)
    assert jobs.promote(conn, q) == [jid]

    # reap a lapsed lease
    c = jobs.claim(conn, q, 1)
    time.sleep(0.01)
    assert jobs.reap(conn, q) == [jid]

    snap = snapshots.snapshot(conn, q)  # SCAN … MATCH inside the script, under alice's ACL
    assert snap.pending == [jid] and snap.rows[jid]["attempts"] == "2"
    assert snap.completed == 1
    assert all(k.startswith(f"emq:{{alice.{q}}}:") for k in admin.scan_iter(f"emq:{{alice.{q}}}:*"))
    conn.close()


def test_a_snapshot_sees_only_as_keys(shared, students, monkeypatch):
    as_student(monkeypatch, students["bob"])
    bconn = start_node().connector()
    jobs.enqueue(bconn, "shared-name", "bob's")
    bconn.close()
    as_student(monkeypatch, students["alice"])
    conn = start_node().connector()
    jid = jobs.enqueue(conn, "shared-name", "alice's")
    snap = snapshots.snapshot(conn, "shared-name")
    assert list(snap.rows) == [jid] and snap.pending == [jid]
    conn.close()


def test_a_kernel_with_as_environment(shared, students):
    """A separate interpreter, as a hub-spawned kernel is: only the environment carries the classroom."""
    code = textwrap.dedent(
        """
        from echomq_teach import snapshots, jobs, start_node
        conn = start_node().connector()
        jid = jobs.enqueue(conn, "k", "from a kernel")
        c = jobs.claim(conn, "k", 30000)
        assert jobs.complete(conn, "k", c.id, c.attempts) == "ok"
        print(conn.last(1)[0].line.split()[3], snapshots.snapshot(conn, "k").completed)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECHOMQ_")}
    env.update(students["alice"].env)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["emq:{alice.k}:active", "1"]


def test_a_student_runs_only_the_kits_scripts_and_the_keeper_brings_them_back(shared, students, monkeypatch):
    """After a flush (or a restart) the student's connector waits for the keeper, never loads a script itself."""
    from echomq_teach import connector
    from echomq_teach.classroom import kit_scripts

    _, admin = shared
    as_student(monkeypatch, students["alice"])
    conn = start_node().connector()
    q = f"kept{os.getpid()}"
    jobs.enqueue(conn, q, "before the flush")
    provision.flush_scripts(admin)
    assert len(kit_scripts.missing(admin)) == len(scripts.names())
    # no keeper: the connector says what is missing and who loads it, after a bounded wait
    monkeypatch.setattr(connector, "KEEPER_WAIT_S", 0.5)
    with pytest.raises(EchoMQError, match="keep-scripts"):
        jobs.enqueue(conn, q, "nobody keeps the scripts")
    stop = threading.Event()
    said: list[str] = []
    keeper = threading.Thread(target=kit_scripts.keep, args=([lambda: make_client(shared[0].address)],),
                              kwargs={"interval_s": 0.05, "stop": stop, "say": said.append})
    provision.flush_scripts(admin)
    monkeypatch.setattr(connector, "KEEPER_WAIT_S", 30.0)  # a bound on waiting, not a speed
    keeper.start()
    try:
        jid = jobs.enqueue(conn, q, "after the flush")  # NOSCRIPT, then the keeper's copy
        assert jobs.row(conn, q, jid)["payload"] == "after the flush"
        sent = conn.last(3)
        assert "No matching script" in sent[0].reply_text and sent[1].reply == 1, conn.show_trace(3)
        # the connector learned at its first script that this user may not load one: it never sends SCRIPT LOAD
        assert not [e for e in conn.trace if e.args[:2] == ["SCRIPT", "LOAD"]]
        assert kit_scripts.missing(admin) == [] and said and "loaded" in said[0]
    finally:
        stop.set()
        keeper.join(10)
        conn.close()


# -- the instructor's side ---------------------------------------------------------------------------------
def test_reprovision_replaces_the_password_and_revoke_deletes(shared, tmp_path):
    node, admin = shared
    (first,) = provision.provision_names(admin, ["carol"])
    (second,) = provision.provision_names(admin, ["carol"])
    assert first.password != second.password
    with pytest.raises(redis.exceptions.AuthenticationError):
        raw(first).ping()
    assert raw(second).ping()
    assert provision.revoke(admin, ["carol"]) == 1
    with pytest.raises(redis.exceptions.AuthenticationError):
        raw(second).ping()


def test_the_instructor_command(shared, tmp_path, capsys, monkeypatch):
    node, admin = shared
    roster = tmp_path / "roster.txt"
    roster.write_text("dora\nemil\n")
    out = tmp_path / "creds.json"
    monkeypatch.setenv("ECHOMQ_ADMIN_URL", node.url)
    assert classroom.main(["provision", str(roster), "--out", str(out), "--print"]) == 0
    printed = capsys.readouterr().out
    assert "export ECHOMQ_NAMESPACE='dora'" in printed and "provisioned 2 students" in printed
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    creds = json.loads(out.read_text())["students"]
    assert set(creds) == {"dora", "emil"}
    assert credentials.spawner_environment("Dora", out) == creds["dora"]
    assert credentials.spawner_environment("zed", out) == {}
    assert classroom.main(["env", "emil", "--credentials", str(out)]) == 0
    assert "export ECHOMQ_URL='redis://emil:" in capsys.readouterr().out
    assert make_client(address_from_url(creds["emil"]["ECHOMQ_URL"])).ping()
    provision.revoke(admin, ["dora", "emil"])


def test_the_instructor_command_needs_an_admin_url(tmp_path, monkeypatch):
    monkeypatch.delenv("ECHOMQ_ADMIN_URL", raising=False)
    roster = tmp_path / "r.txt"
    roster.write_text("x\n")
    with pytest.raises(SystemExit, match="ECHOMQ_ADMIN_URL"):
        classroom.main(["provision", str(roster)])


def test_the_admin_url_never_travels_on_the_command_line(shared, tmp_path, capsys, monkeypatch):
    # defect 12: `ps` shows every argument to every user, so there is no --admin-url to give
    node, admin = shared
    monkeypatch.delenv("ECHOMQ_ADMIN_URL", raising=False)
    r = tmp_path / "r.txt"
    r.write_text("fay\n")
    with pytest.raises(SystemExit) as exc:
        classroom.main(["provision", str(r), "--admin-url", node.url])
    assert exc.value.code == 2 and "unrecognized arguments: --admin-url" in capsys.readouterr().err
    env_file = tmp_path / "admin.env"
    credentials.write_secret(env_file, f"# the instructor's\nECHOMQ_ADMIN_URL={node.url}\n")
    out = tmp_path / "creds.json"
    assert classroom.main(["provision", str(r), "--admin-env", str(env_file), "--out", str(out)]) == 0
    assert "fay" in credentials.read_credentials(out)
    provision.revoke(admin, ["fay"])


def test_credentials_are_created_exclusively_never_through_a_planted_name(tmp_path):
    """Defect 12: someone who can write the folder plants the old predictable temporary name as a symlink."""
    out = tmp_path / "credentials.json"
    victim = tmp_path / "elsewhere.txt"
    victim.write_text("keep me\n")
    victim.chmod(0o644)
    (tmp_path / "credentials.json.tmp").symlink_to(victim)  # the name the old code wrote through
    student = credentials.Student("gus", "s3cret-pw", "127.0.0.1", 6390)
    credentials.write_credentials(out, [student])
    assert victim.read_text() == "keep me\n", "the secrets went through a planted symlink"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and out.stat().st_uid == os.getuid()
    assert credentials.read_credentials(out)["gus"]["ECHOMQ_URL"] == student.url
    # a symlink planted at the target itself is replaced, never followed
    out.unlink()
    out.symlink_to(victim)
    credentials.write_credentials(out, [student])
    assert not out.is_symlink() and victim.read_text() == "keep me\n"
    leftovers = sorted(p.name for p in tmp_path.iterdir())
    assert leftovers == ["credentials.json", "credentials.json.tmp", "elsewhere.txt"]


def test_init_writes_a_folder_whose_secrets_only_its_owner_reads(tmp_path):
    d = tmp_path / "room"
    admin = compose.init_folder(d, maxmemory="128mb", maxclients=300)
    pw = address_from_url(admin["ECHOMQ_ADMIN_URL"])["password"]
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    for name in ("admin.env", "instructor.password", ".env"):
        st = (d / name).stat()
        assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid(), name
    assert credentials.admin_urls(d / "admin.env") == admin
    node_dir = d / "node"
    assert stat.S_IMODE(node_dir.stat().st_mode) == 0o700
    run = node_dir / compose.SOCKET_DIR  # the socket's folder: the only part of node/ a student's container sees
    assert stat.S_IMODE(run.stat().st_mode) == 0o755 and list(run.iterdir()) == []
    assert admin["ECHOMQ_ADMIN_URL"].startswith(f"unix://:{pw}@{run}/")
    env = credentials.read_env_file(d / ".env")
    assert int(env["ECHOMQ_NODE_DATA_LIMIT"]) == 128 * 2**20 + compose.DATA_HEADROOM
    assert int(env["ECHOMQ_NODE_MEM_LIMIT"]) == 128 * 2**20 + compose.MEMORY_HEADROOM
    for f in node_dir.iterdir():
        if f == run:
            continue
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
        assert pw not in f.read_text(), f"{f.name} holds the admin password"
    if os.getuid() == 0:  # the nodes run as nobody: they own their folder, not the secrets
        assert node_dir.stat().st_uid == compose.NOBODY and (d / "admin.env").stat().st_uid == 0
    conf = (node_dir / "node.conf").read_text()
    assert f"unixsocket {compose.MOUNT}/{compose.SOCKET_DIR}/{compose.SOCKET_NAME}" in conf
    for line in ("maxmemory 128mb", "maxmemory-policy noeviction", "busy-reply-threshold 1000", "maxclients 300"):
        assert line in conf
    with pytest.raises(EchoMQError, match="already a classroom folder"):
        compose.init_folder(d)
    with pytest.raises(EchoMQError, match="not a size"):  # refused before anything is written
        compose.init_folder(tmp_path / "other", maxmemory="lots")
    assert not (tmp_path / "other").exists()


def test_the_hashed_acl_line_lets_the_admin_in(shared):
    # the node folder holds only the SHA-256 of the admin password; the node accepts the password itself
    node, admin = shared
    pw = "instructor-pw-1"
    words = compose.acl_admin_line(pw).split()
    assert words[:3] == ["user", "default", "on"] and words[3].startswith("#") and pw not in words[3]
    admin.execute_command("ACL", "SETUSER", "hashcheck", "reset", *words[2:])
    try:
        c = make_client({"host": "127.0.0.1", "port": node.port, "username": "hashcheck", "password": pw})
        assert c.ping()
        c.close()
    finally:
        admin.execute_command("ACL", "DELUSER", "hashcheck")


# -- defect 14: a refresh on the shared node costs one queue, not the whole class -------------------------
def _scans(admin) -> int:
    return int(admin.info("commandstats").get("cmdstat_scan", {}).get("calls", 0))


def test_a_refresh_visits_only_its_queues_slot(shared, students, monkeypatch):
    """@snapshot and @drop SCAN MATCH inside one script: on the classroom node that is one slot's walk."""
    _, admin = shared
    assert "cluster-enabled yes" in compose.node_conf(6390, "users.acl", native=False)
    assert "cluster-enabled" not in compose.node_conf(6391, "native-users.acl", native=True)
    pipe = admin.pipeline(transaction=False)
    for s in range(30):  # 30 students' queues, 3,000 rows: a whole-node walk would take 3+ SCAN calls
        for j in range(100):
            pipe.hset(f"emq:{{s{s:02d}.big}}:job:JOB{j:08d}", "state", "pending")
        pipe.execute()
    try:
        as_student(monkeypatch, students["alice"])
        conn = start_node().connector()
        jid = jobs.enqueue(conn, "refresh", "one of mine")
        before = _scans(admin)
        snap = snapshots.snapshot(conn, "refresh")
        assert list(snap.rows) == [jid]
        assert _scans(admin) - before == 1, "the refresh walked more than its queue's slot"
        before = _scans(admin)
        assert jobs.drop(conn, "refresh") >= 2
        assert _scans(admin) - before == 1
        conn.close()
    finally:
        for s in range(30):
            keys = list(admin.scan_iter(f"emq:{{s{s:02d}.big}}:*", count=1000))
            if keys:
                admin.delete(*keys)


# -- the shared node's limits: one student cannot starve the rest -------------------------------------------
def test_a_busy_script_is_killed_by_the_instructor_only(shared, students):
    """A script past the busy bound (only the kit's or the instructor's run here) is ended by the instructor alone."""
    node, admin = shared
    alice, bob = raw(students["alice"]), raw(students["bob"])
    alice2 = raw(students["alice"])
    busy_client = make_client(node.address)
    result: dict = {}

    def loop() -> None:
        try:
            busy_client.eval("while true do end", 0)
        except redis.exceptions.ResponseError as exc:
            result["error"] = str(exc)

    t = threading.Thread(target=loop)
    t.start()
    try:
        deadline = time.monotonic() + 10
        busy = None
        while time.monotonic() < deadline and busy is None:
            try:
                bob.ping()
                time.sleep(0.05)
            except redis.exceptions.BusyLoadingError as exc:
                busy = str(exc)
            except redis.exceptions.ResponseError as exc:
                busy = str(exc)
        assert busy and "BUSY" in busy, "past the bound, the node answers BUSY to everyone"
        for who in (alice2, bob):  # no student may end it
            for cmd in (("SCRIPT", "KILL"), ("FUNCTION", "KILL")):
                with pytest.raises(redis.exceptions.NoPermissionError):
                    who.execute_command(*cmd)
        assert "ended" in provision.kill_script(admin)  # the instructor may
        t.join(10)
        assert not t.is_alive() and "killed" in result.get("error", "").lower()
        assert bob.ping()
    finally:
        if t.is_alive():
            admin.execute_command("SCRIPT", "KILL")
            t.join(10)
        for c in (alice, alice2, bob, busy_client):
            c.close()


def test_a_full_node_refuses_writes_and_evicts_nobody(shared, students):
    _, admin = shared
    alice, bob = raw(students["alice"]), raw(students["bob"])
    bkey = "emq:{bob.mem}:job:JOBkept"
    bob.hset(bkey, "payload", "bob's")
    used = int(admin.info("memory")["used_memory"])
    admin.config_set("maxmemory", used + 2 * 1024 * 1024)
    try:
        chunk = "x" * 65536
        refused = None
        for i in range(200):  # at most 12.5 MB: well past the 2 MB headroom
            try:
                alice.set(f"emq:{{alice.mem}}:job:JOB{i:04d}", chunk)
            except redis.exceptions.OutOfMemoryError as exc:
                refused = str(exc)
                break
        assert refused and "maxmemory" in refused
        assert bob.hget(bkey, "payload") == "bob's", "noeviction: nobody's keys are evicted"
        with pytest.raises(redis.exceptions.OutOfMemoryError):  # the cap is shared: bob's writes wait too
            bob.hset(bkey, "more", chunk)
        assert bob.hget(bkey, "payload") == "bob's"  # reads still answer
    finally:
        admin.config_set("maxmemory", LIMITS["maxmemory"])
        for k in admin.scan_iter("emq:{alice.mem}:*"):
            admin.delete(k)
        admin.delete(bkey)
        alice.close()
        bob.close()
    # one command can add at most proto-max-bulk-len (8 MB) past the cap
    big = raw(students["alice"])
    with pytest.raises(redis.exceptions.RedisError):
        big.set("emq:{alice.mem}:big", "x" * (9 * 1024 * 1024))
    big.close()
    assert admin.exists("emq:{alice.mem}:big") == 0


def test_the_node_bounds_its_clients(shared, students):
    _, admin = shared
    assert admin.config_get("maxclients")["maxclients"] == LIMITS["maxclients"]
    assert admin.config_get("maxmemory-policy")["maxmemory-policy"] == "noeviction"
    now = int(admin.info("clients")["connected_clients"])
    admin.config_set("maxclients", now + 2)
    opened = []
    try:
        # (in cluster mode the server words it "max number of clients + cluster connections reached")
        with pytest.raises(redis.exceptions.RedisError, match="max number of clients"):
            for _ in range(5):
                c = raw(students["alice"])
                c.ping()
                opened.append(c)
        assert len(opened) == 2
    finally:
        for c in opened:
            c.close()
        admin.config_set("maxclients", LIMITS["maxclients"])


# -- a native shared node (notebook 04's wire 6) -------------------------------------------------------------
@pytest.fixture(scope="module")
def native_pair(shared):
    try:
        # standalone, as compose.node_conf writes it: trafikey reads the brand across slots
        nnode = LocalNode(native=True, extra_config=LIMITS)
    except NodeError as exc:
        pytest.skip(f"the trafikey module does not build here: {exc}")
    node, admin = shared
    nadmin = nnode.client()
    students = {s.name: s for s in provision.provision_names(admin, ["nina", "otto"], nadmin)}
    yield nnode, nadmin, students
    provision.revoke(admin, ["nina", "otto"])
    nadmin.close()
    nnode.stop()


def test_native_twin_is_namespaced_too(native_pair, monkeypatch):
    nnode, nadmin, students = native_pair
    nina, otto = students["nina"], students["otto"]
    assert nina.env["ECHOMQ_NATIVE_URL"].endswith(f"127.0.0.1:{nnode.port}/0")
    assert nadmin.get(keyspace.VERSION_KEY) == keyspace.BRAND_WIRE6

    as_student(monkeypatch, nina)
    conn = start_node(native=True).connector()  # MODULE is denied: the check asks COMMAND LIST
    assert conn.wire == 6
    jid = jobs.enqueue(conn, "n", "native")
    c = jobs.claim(conn, "n", 30_000)
    assert conn.last(1)[0].args[0] == "EMQ.CLAIM" and c.id == jid
    assert jobs.complete(conn, "n", c.id, c.attempts) == jobs.OK
    jobs.enqueue(conn, "n", "batched")
    assert [j.payload for j in jobs.claim_many(conn, "n", 30_000, 5)] == ["batched"]  # the kit's batch claim too
    assert conn.last(1)[0].args[0] == "EMQ.CLAIM.MANY"
    scripted = start_node().connector()  # ECHOMQ_URL: the scripted node, still wire 4
    assert scripted.wire == 4
    scripted.close()

    # otto's keys through the native command: the declared keys are checked against the ACL
    as_student(monkeypatch, otto)
    oconn = start_node(native=True).connector()
    jobs.enqueue(oconn, "n", "otto's")
    oconn.close()
    a = make_client(address_from_url(nina.env["ECHOMQ_NATIVE_URL"]))
    with pytest.raises(redis.exceptions.NoPermissionError):
        a.execute_command("EMQ.CLAIM", 3, "emq:{otto.n}:pending", "emq:{otto.n}:active", "emq:{otto.n}:", 1000)
    with pytest.raises(redis.exceptions.NoPermissionError):
        a.execute_command("EMQ.CLAIM.MANY", 3, "emq:{otto.n}:pending", "emq:{otto.n}:active", "emq:{otto.n}:",
                          1000, 5)
    a.close()
    assert nadmin.zcard("emq:{otto.n}:pending") == 1
    conn.close()


# -- the course itself, as a student on the shared node: tests/course/test_course_browser.py runs 01 to 09 as a
# student in JupyterLab (their one run beside nbval), and tests/classroom/test_hub.py runs 00 in a student's container
