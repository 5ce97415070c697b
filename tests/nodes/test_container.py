"""The container provider against a real Docker engine (mark ``container``).

Every engine test skips, with the reason, when no engine answers at
DOCKER_HOST or the node image is not built. tools/test.sh (as root) starts a
private engine and builds the offline image before it runs the suite.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import redis
from image_support import image_skip_reason

from echomq_teach import jobs, keyspace, snapshots, start_node
from echomq_teach.connector import make_client
from echomq_teach.errors import NodeError
from echomq_teach.nodes import container, valkey

_reason = image_skip_reason(os.environ.get("ECHOMQ_NODE_IMAGE") or container.DEFAULT_IMAGE,
                            "bash docker/build-offline.sh")
needs_engine = pytest.mark.skipif(_reason is not None, reason=_reason or "")


def _has_module() -> bool:
    client = container.engine()
    try:
        img = container.image_info(client, os.environ.get("ECHOMQ_NODE_IMAGE") or container.DEFAULT_IMAGE)
        return container.image_has_module(img)
    finally:
        client.close()


@pytest.fixture(scope="module")
def cnode():
    n = start_node(provider="container")
    yield n
    n.stop()


@pytest.fixture(scope="module")
def cnative():
    if not _has_module():
        pytest.skip("the node image has no trafikey module yet (rebuild: bash docker/build-offline.sh --module yes)")
    n = start_node(provider="container", native=True)
    yield n
    n.stop()


def run_lifecycle(conn, queue: str) -> None:
    """enqueue → claim → complete; a retry and its promote; a lapsed lease reaped."""
    jid = jobs.enqueue(conn, queue, "first")
    c = jobs.claim(conn, queue, 30_000)
    assert c is not None and (c.id, c.payload, c.attempts) == (jid, "first", 1)
    assert jobs.complete(conn, queue, c.id, c.attempts) == jobs.OK
    assert jobs.complete(conn, queue, c.id, c.attempts) == jobs.STALE
    assert jobs.row(conn, queue, jid) == {}

    jid = jobs.enqueue(conn, queue, "flaky")
    c = jobs.claim(conn, queue, 30_000)
    assert jobs.retry(conn, queue, c.id, c.attempts, "boom", delay_ms=1) == jobs.SCHEDULED
    time.sleep(0.01)
    assert jobs.promote(conn, queue) == [jid]
    c = jobs.claim(conn, queue, 1)
    assert c.attempts == 2
    time.sleep(0.01)
    assert jobs.reap(conn, queue) == [jid]
    snap = snapshots.snapshot(conn, queue)
    assert snap.pending == [jid] and snap.rows[jid]["state"] == "pending" and snap.completed == 1


# -- no engine, no image: one clear message each (these need no engine) ------------------------------
def test_no_engine_says_how_to_start_one(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nobody.sock")
    with pytest.raises(NodeError, match="no Docker engine answers.*tools/dockerd.sh"):
        start_node(provider="container")
    assert container.engine_answers() is False


def test_unknown_arguments_are_refused():
    with pytest.raises(NodeError, match="does not take unix_socket"):
        container.start(unix_socket=True)


@needs_engine
@pytest.mark.container
def test_missing_image_says_how_to_build_it():
    with pytest.raises(NodeError, match="not in the local engine.*build-offline.sh"):
        start_node(provider="container", image="echomq-node:no-such-tag")


# -- a scripted node in a container ----------------------------------------------------------------------
@needs_engine
@pytest.mark.container
def test_scripted_lifecycle(cnode, queue):
    conn = cnode.connector()
    assert conn.wire == 4 and not cnode.native
    run_lifecycle(conn, queue)
    assert cnode.client().get(keyspace.VERSION_KEY) == keyspace.BRAND_WIRE4
    assert conn.last(1)[0].script == "@snapshot"
    conn.close()


@needs_engine
@pytest.mark.container
@pytest.mark.parametrize("which", ["cnode", "cnative"])
def test_a_container_node_never_evicts(which, request):
    # the same server_config as a local node (tests/nodes/test_noeviction.py): a queue never loses a key
    node = request.getfixturevalue(which)
    admin = node.client()
    assert admin.config_get("maxmemory-policy")["maxmemory-policy"] == "noeviction"
    admin.close()


@needs_engine
@pytest.mark.container
def test_host_network_loopback_and_password(cnode):
    c = container.engine()
    try:
        attrs = c.containers.get(cnode.container_id).attrs
    finally:
        c.close()
    assert attrs["HostConfig"]["NetworkMode"] == "host"
    assert cnode.password not in " ".join(attrs["Config"]["Cmd"] or []), "the password stays off the command line"
    admin = cnode.client()
    assert admin.config_get("bind")["bind"] == "127.0.0.1"
    assert admin.info("server")["valkey_version"] == valkey.PINNED  # the pinned release, no known crash
    admin.close()
    stranger = make_client({"host": "127.0.0.1", "port": cnode.port})  # no retries: refused at once
    with pytest.raises(redis.exceptions.AuthenticationError):
        stranger.ping()
    stranger.close()


@needs_engine
@pytest.mark.container
def test_no_reaper_container():
    c = container.engine()
    try:
        images = [ct.attrs["Config"]["Image"] for ct in c.containers.list(all=True)]
    finally:
        c.close()
    assert not [i for i in images if "ryuk" in i]


@needs_engine
@pytest.mark.container
def test_stop_removes_the_container():
    n = start_node(provider="container")
    cid, folder = n.container_id, n.dir
    assert n.running and n.connector().call("PING") is True
    n.stop()
    c = container.engine()
    try:
        assert cid not in [ct.id for ct in c.containers.list(all=True)]
    finally:
        c.close()
    assert not folder.exists() and not n.running


@needs_engine
@pytest.mark.container
def test_durable_restart_keeps_the_queue(queue):
    n = start_node(provider="container", durable=True)
    try:
        conn = n.connector()
        jid = jobs.enqueue(conn, queue, "survives")
        first = n.run_id
        n.restart()
        assert n.run_id != first
        conn = n.connector()
        assert jobs.claim(conn, queue, 30_000).id == jid
    finally:
        n.stop()


# -- a native node in a container ---------------------------------------------------------------------------
@needs_engine
@pytest.mark.container
def test_native_lifecycle(cnative, queue):
    conn = cnative.connector()
    assert conn.wire == 6 and cnative.native
    assert cnative.client().get(keyspace.VERSION_KEY) == keyspace.BRAND_WIRE6
    run_lifecycle(conn, queue)
    sent = [e.args[0] for e in conn.trace]
    assert {"EMQ.CLAIM", "EMQ.COMPLETE", "EMQ.FAIL"} <= set(sent)


@needs_engine
@pytest.mark.container
def test_native_stall_sweep_in_a_container(cnative, queue):
    from echomq_teach import stalled

    conn = cnative.connector()
    jid = jobs.enqueue(conn, queue, "slow")
    jobs.claim(conn, queue, 1)
    time.sleep(0.01)
    report = stalled.check(conn, queue, max_stalled=1)
    assert report.requeued == [jid] and conn.last(1)[0].args[0] == "EMQ.STALLED.CHECK"


# -- the files the images and Binder are built from (no engine needed) ------------------------------------
ROOT = Path(__file__).resolve().parents[2]


def test_binder_environment_matches_the_root_one():
    yaml = pytest.importorskip("yaml")
    root = yaml.safe_load((ROOT / "environment.yml").read_text())
    binder = yaml.safe_load((ROOT / "binder" / "environment.yml").read_text())
    conda_deps = [d for d in root["dependencies"] if isinstance(d, str)]
    assert binder["dependencies"] == conda_deps, "binder/environment.yml drifted from environment.yml"
    assert binder["channels"] == root["channels"]
    assert os.access(ROOT / "binder" / "postBuild", os.X_OK)


def test_both_routes_put_the_module_where_the_kit_loads_it():
    offline = (ROOT / "docker" / "build-offline.sh").read_text()
    dockerfile = (ROOT / "docker" / "node.Dockerfile").read_text()
    for text in (offline, dockerfile):
        assert container.MODULE_PATH in text and container.MODULE_LABEL in text
        assert "/usr/local/bin/valkey-server" in text
    assert "FROM scratch" not in dockerfile and "tools/install-valkey.sh" in dockerfile
