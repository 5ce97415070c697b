"""A node's life follows its kernel's in every case (issue 13, defect 13).

The server's death signal must not be bound to the thread that forked it; a
node whose last reference is dropped stops; and a kernel killed with SIGKILL
takes its embedded server and its container node with it, checked by PID and
by container id on a real kernel.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import threading
import time

import pytest
from conftest import alive, wait_for, wait_gone

from echomq_teach.nodes import container
from echomq_teach.nodes.local import LocalNode


def test_a_node_started_from_a_worker_thread_outlives_the_thread() -> None:
    box: dict = {}

    def start() -> None:
        box["tid"] = threading.get_native_id()
        box["node"] = LocalNode()

    t = threading.Thread(target=start)
    t.start()
    t.join()
    n = box["node"]
    try:
        # a death signal bound to the thread is sent as the thread's task exits, before the task leaves
        # /proc; a server sent SIGKILL never answers again, so the PING below is the event, not a nap
        wait_for(lambda: not os.path.exists(f"/proc/self/task/{box['tid']}"), "the thread's task is gone")
        c = n.client()
        assert c.ping(), "the server died with the thread that started it"
        c.close()
        assert alive(n.pid)
    finally:
        n.stop()


def test_a_node_whose_last_reference_is_dropped_stops() -> None:
    n = LocalNode()
    pid, folder = n.pid, n.dir
    del n
    gc.collect()
    assert wait_gone([pid], 10) == [], "the server outlived its last reference"
    assert not folder.exists()


def test_a_connector_or_client_keeps_its_node_alive() -> None:
    conn = LocalNode().connector()
    raw = LocalNode().client()
    gc.collect()
    try:
        assert conn.call("PING") is True
        assert raw.ping()
    finally:
        pids = [conn.node.pid, raw.echomq_node.pid]
        conn.close()
        raw.close()
        del conn, raw
        gc.collect()
    assert wait_gone(pids, 10) == []


# -- a real kernel, really killed --------------------------------------------------------------------------
KERNEL_CODE = """
import json
import threading
from echomq_teach import start_node
from echomq_teach.nodes.local import LocalNode
main_node = LocalNode()
box = {}
t = threading.Thread(target=lambda: box.setdefault("n", LocalNode()))
t.start(); t.join()
out = {"kernel": __import__("os").getpid(), "pids": [main_node.pid, box["n"].pid]}
if WITH_CONTAINER:
    cnode = start_node(provider="container")
    out["container"] = cnode.container_id
print("NODES" + json.dumps(out))
"""


def _engine_reason() -> str | None:
    try:
        client = container.engine()
    except Exception as exc:  # noqa: BLE001
        return f"no Docker engine answers ({exc})"
    try:
        container.image_info(client, os.environ.get("ECHOMQ_NODE_IMAGE") or container.DEFAULT_IMAGE)
    except Exception:  # noqa: BLE001
        return "the node image is not built (bash docker/build-offline.sh)"
    finally:
        client.close()
    return None


BUSY_CODE = """
import json
import threading
import time

import redis
from echomq_teach.nodes.local import LocalNode
busy_node = LocalNode(extra_config={"busy-reply-threshold": "100"})
looper = busy_node.client()
threading.Thread(target=lambda: looper.eval("while true do end", 0), daemon=True).start()
probe = busy_node.client()
busy = False
for _ in range(200):
    try:
        probe.ping()
        time.sleep(0.05)
    except redis.exceptions.RedisError as exc:
        busy = "BUSY" in str(exc)
        break
print("NODES" + json.dumps({"kernel": __import__("os").getpid(), "pids": [busy_node.pid], "busy": busy}))
"""


def _run_in_kernel(with_container: bool, code: str = KERNEL_CODE) -> tuple[dict, object]:
    jupyter_client = pytest.importorskip("jupyter_client")
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(env=dict(os.environ), cwd=os.getcwd())
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        out: list[str] = []
        reply = kc.execute_interactive(
            code.replace("WITH_CONTAINER", repr(with_container)),
            timeout=120,
            output_hook=lambda m: out.append(m["content"].get("text", "")) if m["msg_type"] == "stream" else None,
        )
        assert reply["content"]["status"] == "ok", reply["content"]
        seen = json.loads("".join(out).split("NODES", 1)[1])
    finally:
        kc.stop_channels()
    return seen, km


def _kill_kernel(km, seen: dict) -> None:
    pid = seen["kernel"]
    assert alive(pid) and all(alive(p) for p in seen["pids"]), "a node died before its kernel"
    os.kill(pid, signal.SIGKILL)  # that one process only: no exit hook, no process-group kill
    assert wait_gone([pid], 10) == []


def test_a_killed_kernel_takes_its_embedded_nodes_with_it() -> None:
    seen, km = _run_in_kernel(with_container=False)
    try:
        _kill_kernel(km, seen)
        assert wait_gone(seen["pids"], 10) == [], "a server outlived its SIGKILLed kernel"
    finally:
        _cleanup(km, seen)


def test_a_killed_kernel_takes_a_busy_node_with_it() -> None:
    # a server busy in a script only schedules its shutdown on SIGTERM and runs on: the death signal is SIGKILL
    seen, km = _run_in_kernel(with_container=False, code=BUSY_CODE)
    try:
        assert seen["busy"], "the node never got busy"
        _kill_kernel(km, seen)
        assert wait_gone(seen["pids"], 10) == [], "a server busy in a script outlived its SIGKILLed kernel"
    finally:
        _cleanup(km, seen)


def _cleanup(km, seen: dict) -> None:
    """Whatever the test left: the kernel and its servers, by PID."""
    for p in [seen.get("kernel"), *seen.get("pids", [])]:
        if p and alive(p):
            os.kill(p, signal.SIGKILL)
    try:
        km.cleanup_resources()
    except Exception:  # noqa: BLE001
        pass


@pytest.mark.container
def test_a_killed_kernel_takes_its_container_node_with_it() -> None:
    reason = _engine_reason()
    if reason:
        pytest.skip(reason)
    seen, km = _run_in_kernel(with_container=True)
    cid = seen["container"]
    client = container.engine()
    try:
        assert all(alive(p) for p in seen["pids"]), "the worker thread's node died with its thread"
        assert client.containers.get(cid).status == "running"
        _kill_kernel(km, seen)
        assert wait_gone(seen["pids"], 10) == []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and cid in [c.id for c in client.containers.list(all=True)]:
            time.sleep(0.1)
        assert cid not in [c.id for c in client.containers.list(all=True)], "the container outlived its kernel"
    finally:
        _cleanup(km, seen)
        for ct in client.containers.list(all=True):
            if ct.id == cid:
                ct.remove(force=True)
        client.close()


@pytest.mark.container
def test_sweep_removes_a_dead_owners_container_and_spares_a_live_one() -> None:
    reason = _engine_reason()
    if reason:
        pytest.skip(reason)
    import subprocess

    # a process that starts a container node and then dies without running any hook
    code = (
        "import os\nfrom echomq_teach import start_node\n"
        "n = start_node(provider='container')\nprint(n.dir, n.container_id, flush=True)\nos._exit(0)\n"
    )
    env = {**os.environ, "ECHOMQ_NO_REAPER": "1"}  # only the sweep may clean up after it
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    dead_dir, dead_cid = out.stdout.split()[-2:]
    client = container.engine()
    live = None
    try:
        assert dead_cid in [c.id for c in client.containers.list(all=True)], "left behind, as a dead kernel's"
        live = container.start()  # every start sweeps first
        ids = [c.id for c in client.containers.list(all=True)]
        assert dead_cid not in ids and not os.path.exists(dead_dir), "the sweep removes the container and its folder"
        assert container.sweep() == []  # a live owner's container is spared
        assert live.container_id in [c.id for c in client.containers.list(all=True)] and live.running
    finally:
        for ct in client.containers.list(all=True):
            if ct.id == dead_cid:
                ct.remove(force=True)
        client.close()
        if live is not None:
            live.stop()
