"""Shared fixtures: real nodes the suite starts itself, one fresh queue per test."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import tempfile
import time

import pytest
from a11y_support import pytest_terminal_summary  # noqa: F401 - the accessibility audit's figures
from skip_check import pytest_addoption, pytest_configure  # noqa: F401 - the unexpected-skip check

from echomq_teach import snapshots, start_node
from echomq_teach.nodes.local import LocalNode

_names = itertools.count()


@pytest.fixture(scope="session")
def node():
    """A scripted node (wire 4) for the whole session, stopped by PID at the end."""
    n = LocalNode()
    yield n
    n.stop()


@pytest.fixture(scope="session")
def native_node():
    """A node with the trafikey module loaded (wire 6)."""
    n = start_node(native=True, provider="local")
    yield n
    n.stop()


@pytest.fixture(scope="session")
def durable():
    """A scripted node with an append-only file synced on every write, so that a restart keeps its data."""
    n = LocalNode(durable=True)
    yield n
    n.stop()


@pytest.fixture(scope="session")
def object_store():
    """A real SeaweedFS S3 server (``weed``) for the session's remote floors, stopped by PID at the end."""
    from echomq_teach.floor.objectstore import start_object_store

    store = start_object_store()
    yield store
    store.stop()


@pytest.fixture(scope="session")
def cluster():
    """A Valkey Cluster (three primaries, one replica each, trafikey on every node) for the session.

    Every node is stopped by PID at the end. A queue's brand is its own on a
    cluster, so scripted (wire 4) and native (wire 6) queues share it.
    """
    from echomq_teach.nodes.cluster import LocalCluster

    c = LocalCluster(native=True)
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(params=[4, 6], ids=["scripts", "native"])
def cluster_conn(cluster, request):
    """A cluster connector, once per executor."""
    c = cluster.connector(wire=request.param)
    yield c
    c.close()


@pytest.fixture
def conn(node):
    c = node.connector()
    yield c
    c.close()


@pytest.fixture
def native_conn(native_node):
    c = native_node.connector()
    yield c
    c.close()


@pytest.fixture(params=["scripted", "native"])
def either(request, conn, native_conn):
    """One test, two executors: a wire 4 connector, then a wire 6 one."""
    return conn if request.param == "scripted" else native_conn


@pytest.fixture
def queue(request):
    """A queue name of this test's own, so tests never see each other's jobs."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", f"t{os.getpid()}-{next(_names)}-{request.node.name[:40]}")


def state(conn, queue):
    """The queue's state without the clock, for before/after comparisons."""
    return snapshots.snapshot(conn, queue).state_only()


def refuses_anonymous(port: int) -> None:
    """A client on 127.0.0.1:port without the password is refused."""
    import redis

    anon = redis.Redis(host="127.0.0.1", port=port)
    try:
        with pytest.raises(redis.exceptions.AuthenticationError):
            anon.ping()
    finally:
        anon.close()


def server_ms(conn) -> int:
    """The server's clock in ms (TIME), the clock every lease and run-at is stamped with."""
    sec, usec = conn.client.time()
    return sec * 1000 + usec // 1000


def wait_until_due(conn, queue: str, set_name: str) -> None:
    """Sleep until every member of the set is due on the server clock (a bound, not an assertion on speed)."""
    for _ in range(200):
        snap = snapshots.snapshot(conn, queue)
        scores = snap.sets[set_name].values()
        if not scores or max(scores) < snap.now_ms:
            return
        time.sleep(max(0.002, (max(scores) - snap.now_ms + 2) / 1000))
    raise AssertionError(f"{set_name} never came due")


def gone(pid: int) -> bool:
    """True once no process has this PID (signal 0 only asks)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as ended, unlike ``gone``)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def wait_gone(pids: list[int], timeout: float = 10) -> list[int]:
    """Wait (bounded) until none of ``pids`` runs; answers those still running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def wait_for(predicate, what: str, timeout: float = 30.0) -> None:
    """Poll ``predicate`` until it holds, failing with ``what`` after ``timeout`` s (a bound, not a measurement)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"never: {what}")


def terminate(proc, timeout: float = 20) -> None:
    """Stop a process this suite started: SIGTERM to its PID, then SIGKILL if it will not go in time."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


#: the marks whose tests run alone: in tools/test.sh's second session, one after another, beside nothing else (a
#: browser, a Docker engine or a hub loads the machine, and a lease or bound beside them would pay for it)
ALONE = ("browser", "container", "hub")


@pytest.hookimpl(tryfirst=True)  # before -m "alone" / -m "not alone" selects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(item.get_closest_marker(mark) for mark in ALONE):
            item.add_marker(pytest.mark.alone)


def pytest_sessionfinish(session, exitstatus):
    # kernels the notebook and browser tests shut down run no exit hooks: their servers died
    # with them, and this removes the folders they left, and the containers of any that died hard
    from echomq_teach.nodes.host import sweep_stale_dirs

    sweep_stale_dirs()
    if os.environ.get("DOCKER_HOST"):
        try:
            from echomq_teach.nodes import container

            container.sweep()
        except Exception:  # noqa: BLE001 - no engine (any more): nothing to sweep
            pass


@pytest.fixture(autouse=True)
def no_figure_left_open():
    """Every test ends with pyplot holding no figure: a worker runs many tests in one process, and a
    figure one test left open would be drawn by the next test's ``figures.show()``."""
    yield
    import sys

    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


@pytest.fixture(autouse=True)
def predictions_folder(request):
    """A course test keeps committed predictions in a fresh folder of its own (and its seal), never the learner's.

    The kit chooses the folder once, as a process starts; a test chooses its own with ``predictions.use``,
    the kit's machinery for that. (Here, not in tests/course/conftest.py: a second conftest module would
    shadow this one for the tests that import helpers from it.)
    """
    if "course" not in request.path.parts:
        yield None
        return
    from echomq_teach.course import predictions

    folder = request.getfixturevalue("tmp_path") / "predictions"
    before = predictions.use(folder)
    try:
        yield folder
    finally:
        predictions.use(before)


# outside the course tests too, nothing the suite runs keeps a prediction in the learner's own folder
os.environ.setdefault("ECHOMQ_PREDICTIONS", tempfile.mkdtemp(prefix="echomq-predictions-"))
# nor writes into a learner's own queue (course/my_queue): its kernels and tests use a folder of their own
os.environ.setdefault("ECHOMQ_MY_QUEUE", tempfile.mkdtemp(prefix="echomq-my-queue-"))
