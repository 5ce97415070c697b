"""The traced connector: the wire-4 brand, EVALSHA dispatch, and the trace a learner reads."""

from __future__ import annotations

import inspect

import pytest
import redis

from echomq_teach import Connector, WireError, jobs, keyspace, scripts
from echomq_teach.cluster_connector import ClusterConnector
from echomq_teach.connector import (
    LINK_ERRORS,
    TRACE_LIMIT,
    NodeConnector,
    NotSent,
    address_from_url,
    connect,
    make_client,
)
from echomq_teach.nodes import LocalNode


@pytest.fixture
def fresh_node():
    """A node of this test's own, for brand games the shared node must not see."""
    n = LocalNode()
    yield n
    n.stop()


# -- the brand ------------------------------------------------------------------------------------
def test_wire4_connector_brands_an_unbranded_node(fresh_node: LocalNode) -> None:
    raw = fresh_node.client()
    try:
        assert raw.get(keyspace.VERSION_KEY) is None
        c = fresh_node.connector()
        assert c.wire == 4 and not c.native
        assert raw.get(keyspace.VERSION_KEY) == "echomq:4.0.0"
        c.close()
    finally:
        raw.close()


def test_wire4_connector_refuses_a_foreign_brand(fresh_node: LocalNode) -> None:
    raw = fresh_node.client()
    try:
        for foreign in ("echomq:6.0.0", "somebody-else:1"):
            raw.set(keyspace.VERSION_KEY, foreign)
            with pytest.raises(WireError, match="EMQWIRE") as err:
                fresh_node.connector()
            assert foreign in str(err.value) and "echomq:4.0.0" in str(err.value)
            # refusing is read-only: the foreign brand stays as it was
            assert raw.get(keyspace.VERSION_KEY) == foreign
    finally:
        raw.close()


def test_wire6_connector_refuses_a_wire4_node(node) -> None:
    with pytest.raises(WireError, match="echomq:6.0.0"):
        node.connector(wire=6)


def test_wire_must_be_4_or_6(node) -> None:
    with pytest.raises(WireError, match="wire must be 4 or 6"):
        connect(node.address, wire=5)


def test_shared_node_is_branded_wire4(conn: Connector) -> None:
    assert conn.client.get(keyspace.VERSION_KEY) == keyspace.BRAND_WIRE4
    assert not conn.module_loaded()


# -- EVALSHA and the trace ------------------------------------------------------------------------
def test_claim_trace_line_is_exactly_what_a_learner_types(node) -> None:
    c = node.connector()
    try:
        # the page's own queue name, so the line reads exactly as on the page
        for job_id in c.client.zrange("emq:{q}:pending", 0, -1):
            jobs.remove(c, "q", job_id)
        job_id = jobs.enqueue(c, "q", "<payload>")
        c.clear_trace()
        got = jobs.claim(c, "q", 30_000)
        assert got == jobs.Claimed(job_id, "<payload>", 1)
        pause_read, claim = c.last(2)
        assert pause_read.line == "EXISTS emq:{q}:paused"
        assert claim.line == "EVALSHA <sha> 3 emq:{q}:pending emq:{q}:active emq:{q}: 30000"
        assert claim.script == "@claim2"
        # the real sha is kept under the placeholder
        assert claim.args[1] == scripts.load("claim2").sha
        assert claim.reply == [job_id, "<payload>", 1]
        assert claim.reply_text == f"['{job_id}', '<payload>', 1]"
        assert str(claim) == (
            "EVALSHA <sha> 3 emq:{q}:pending emq:{q}:active emq:{q}: 30000  # @claim2\n"
            f"  → ['{job_id}', '<payload>', 1]"
        )
        assert jobs.complete(c, "q", job_id, 1) == jobs.OK
    finally:
        c.close()


def test_sha_is_sha1_of_the_lua_file() -> None:
    import hashlib
    from importlib import resources

    src = resources.files("echomq_teach").joinpath("lua", "claim2.lua").read_text(encoding="utf-8")
    assert scripts.load("@claim2").sha == hashlib.sha1(src.encode()).hexdigest()
    assert scripts.load("claim2") == scripts.load("@claim2")


def test_script_is_loaded_once_per_connector(conn: Connector, queue: str) -> None:
    raw = conn.client
    sha = scripts.load("enqueue").sha
    jobs.enqueue(conn, queue, "a")
    assert raw.script_exists(sha) == [True]
    assert sha in conn.loaded
    jobs.enqueue(conn, queue, "b")
    # the trace holds only the EVALSHAs: no EVAL of the full source on the second call
    assert [e.args[0] for e in conn.last(2)] == ["EVALSHA", "EVALSHA"]


def test_payload_and_spaces_are_shown_quoted_and_cut(conn: Connector, queue: str) -> None:
    long = "x" * 100
    jobs.enqueue(conn, queue, "hello world")
    assert conn.last()[0].line.endswith(' "hello world"')
    jobs.enqueue(conn, queue, long)
    last_word = conn.last()[0].line.split(" ")[-1]
    assert last_word == "x" * 39 + "…"
    jobs.enqueue(conn, queue, "")
    assert conn.last()[0].line.endswith(' ""')


def test_plain_commands_and_errors_are_traced(conn: Connector) -> None:
    assert conn.call("PING") is True
    assert conn.last()[0].line == "PING"
    with pytest.raises(redis.exceptions.ResponseError):
        conn.call("NOSUCHCOMMAND", "x")
    entry = conn.last()[0]
    assert entry.error and isinstance(entry.reply, redis.exceptions.ResponseError)
    assert entry.reply_text.startswith("(error) ")


def test_trace_is_bounded_and_show_trace_reads_it(conn: Connector) -> None:
    for _ in range(TRACE_LIMIT + 20):
        conn.call("PING")
    assert len(conn.trace) == TRACE_LIMIT
    text = conn.show_trace(3)
    assert text.count("PING") == 3
    conn.clear_trace()
    assert conn.last() == [] and conn.show_trace() == ""


def test_fork_is_a_new_client_with_its_own_trace(conn: Connector, queue: str) -> None:
    other = conn.fork()
    try:
        assert other is not conn and other.client is not conn.client
        assert other.wire == conn.wire and other.address == conn.address
        jobs.enqueue(other, queue, "from the fork")
        assert other.last()[0].script == "@enqueue"
        assert all(e.script != "@enqueue" for e in conn.trace)
        # same node: the fork's job is claimable here
        assert jobs.claim(conn, queue, 1000).payload == "from the fork"
    finally:
        other.close()


def test_connect_by_address_reaches_the_node(node) -> None:
    c = connect(node.address)
    try:
        assert c.call("PING") is True
        assert c.client.info("server")["run_id"] == node.run_id
    finally:
        c.close()


def test_make_client_answers_strings(node) -> None:
    raw = make_client(node.address)
    try:
        raw.set("echomq-test:str", "v")
        assert raw.get("echomq-test:str") == "v"
        raw.delete("echomq-test:str")
    finally:
        raw.close()


def test_address_from_url() -> None:
    assert address_from_url("redis://:pw@127.0.0.1:6390/0") == {
        "host": "127.0.0.1",
        "port": 6390,
        "password": "pw",
        "db": 0,
    }
    kw = address_from_url("unix://:pw@/tmp/x/valkey.sock")
    assert kw["unix_socket_path"] == "/tmp/x/valkey.sock" and kw["password"] == "pw"
    assert "path" not in kw and "connection_class" not in kw


# -- one base, two kinds ------------------------------------------------------------------------------
def test_the_base_is_abstract_and_both_kinds_share_it(conn: Connector) -> None:
    with pytest.raises(TypeError, match="abstract"):
        Connector(conn.client)  # type: ignore[abstract]
    assert isinstance(conn, NodeConnector) and not conn.on_cluster
    assert issubclass(ClusterConnector, Connector) and ClusterConnector.on_cluster
    # one fork() signature for both kinds
    assert inspect.signature(NodeConnector.fork).parameters.keys() == \
        inspect.signature(ClusterConnector.fork).parameters.keys() == {"self", "parser"}
    # the pipelined lane is the node's alone
    assert hasattr(NodeConnector, "send_many") and not hasattr(ClusterConnector, "send_many")


def test_link_errors_live_beside_not_sent() -> None:
    assert issubclass(NotSent, LINK_ERRORS) and issubclass(redis.exceptions.TimeoutError, LINK_ERRORS)
    assert not issubclass(redis.exceptions.ResponseError, LINK_ERRORS)
