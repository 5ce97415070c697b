"""throughput: a Pool's drain measured on a real node (jobs/s, round trips, the server's share), a stranded batch."""

from __future__ import annotations

import math
import signal

import matplotlib
import pytest

from echomq_teach import jobs
from echomq_teach.lab import throughput
from echomq_teach.lab.throughput import Drain
from echomq_teach.nodes.local import LocalNode

matplotlib.use("Agg")


@pytest.fixture(scope="module", params=[False, True], ids=["scripted", "native"])
def own_node(request):
    n = LocalNode(native=request.param)
    yield n
    n.stop()


@pytest.fixture
def either(own_node):
    """A connector on a node of this module's own (shadowing conftest's): a drain reads the node's command counts
    and every key on it, which whatever else ran on a shared session node would add to."""
    c = own_node.connector()
    yield c
    c.close()


def everything(conn) -> dict[str, object]:
    """Every key on the node with its type and contents: what 'nothing written' is compared on."""
    raw = conn.client
    out: dict[str, object] = {}
    for k in sorted(raw.keys("*")):
        kind = raw.type(k)
        if kind == "string":
            out[k] = raw.get(k)
        elif kind == "hash":
            out[k] = raw.hgetall(k)
        elif kind == "zset":
            out[k] = raw.zrange(k, 0, -1, withscores=True)
        elif kind == "stream":
            out[k] = raw.xlen(k)
        else:
            out[k] = kind
    return out


def test_a_drain_adds_up(either, queue):
    before = everything(either)
    one = throughput.drain(either, queue, n=300, size=2, batch=1)
    many = throughput.drain(either, queue, n=300, size=2, batch=16)
    assert everything(either) == before  # the queue is dropped again; nothing else was touched
    for d, batch in ((one, 1), (many, 16)):
        assert (d.wire, d.size, d.batch, d.jobs) == (either.wire, 2, batch, 300)
        assert d.seconds > 0 and d.jobs_per_s == pytest.approx(300 / d.seconds)
        assert d.wall_us == pytest.approx(1e6 / d.jobs_per_s) and d.trips_per_job == d.trips / 300
        assert 0 < d.command_us and 0 < d.command_share < 1 and d.command_share == d.command_us / (d.seconds * 1e6)
        assert 0 < d.cpu_us and 0 < d.cpu_share < 1.5  # the server's main thread cannot be busier than the clock
        if either.native:
            claims = d.calls.get("emq.claim.many" if batch > 1 else "emq.claim", 0)
            assert d.calls["emq.complete"] == 300  # one settle per job, no more
            # every claim went out in some round trip, and no round trip carries two of one consumer's claims
            assert claims <= d.trips
        else:
            # the scripted node counts every EVALSHA alike: the consumers' claims and 300 completes, and the
            # metronome's promotes and reaps, as many as the drain lasted beats (more on a loaded machine)
            claims = d.calls["evalsha"] - 300
        assert math.ceil(300 / batch) <= claims
    assert one.trips >= 300 and many.trips < one.trips / 4  # a batch of 16 is far fewer round trips


def test_a_sweep_runs_its_grid_in_order(native_conn, queue):
    drains = throughput.sweep(native_conn, queue, sizes=(1, 3), batches=(1, 8), n=120)
    assert [(d.size, d.batch, d.jobs) for d in drains] == [(1, 1, 120), (1, 8, 120), (3, 1, 120), (3, 8, 120)]
    lines = throughput.report(drains).splitlines()
    assert len(lines) == 5 and lines[0].split()[:3] == ["size", "batch", "jobs/s"]
    assert [tuple(line.split()[:2]) for line in lines[1:]] == [("1", "1"), ("1", "8"), ("3", "1"), ("3", "8")]
    fig = throughput.plot(drains)
    rate, split = fig.axes
    assert [line.get_label() for line in rate.get_lines()] == ["Pool(size=1)", "Pool(size=3)"]
    assert [list(line.get_xdata()) for line in rate.get_lines()] == [[1, 8], [1, 8]]
    assert list(rate.get_lines()[1].get_ydata()) == [drains[2].jobs_per_s, drains[3].jobs_per_s]
    assert rate.get_xlabel() and rate.get_ylabel() == "jobs/s"
    # three stacked bars per drain, whose tops are each drain's wall µs per job
    bars = [list(c) for c in split.containers]
    assert len(bars) == 3 and all(len(b) == 4 for b in bars)
    tops = [b.get_y() + b.get_height() for b in bars[2]]
    assert tops == pytest.approx([max(d.wall_us, (max(d.cpu_us, d.command_us)) / d.jobs) for d in drains])


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"n": 0}, "n"),
        ({"n": throughput.MAX_JOBS + 1}, "n must be at most"),
        ({"size": 0}, "size"),
        ({"size": throughput.MAX_SIZE + 1}, "size must be at most"),
        ({"batch": 0}, "batch size"),
        ({"batch": jobs.MAX_BATCH + 1}, "batch size"),
        ({"batch": True}, "batch size"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": "soon"}, "timeout"),
    ],
)
def test_a_drain_refuses_bad_input_and_writes_nothing(either, queue, kwargs, named):
    before = everything(either)
    with pytest.raises(jobs.BadInput, match=named):
        throughput.drain(either, queue, **kwargs)
    assert everything(either) == before


def test_a_queue_that_holds_jobs_is_refused_and_kept(either, queue):
    held = jobs.enqueue(either, queue, "someone's job")
    before = everything(either)
    for call in (lambda: throughput.drain(either, queue, n=10), lambda: throughput.stranded(either, queue)):
        with pytest.raises(jobs.BadInput, match="already holds 1 jobs"):
            call()
    assert everything(either) == before and jobs.row(either, queue, held)["payload"] == "someone's job"
    with pytest.raises(jobs.BadInput, match="queue"):
        throughput.drain(either, "no spaces allowed", n=10)
    assert everything(either) == before


def test_a_sweep_refuses_bad_input_and_writes_nothing(native_conn, queue):
    before = everything(native_conn)
    for kwargs, named in (({"sizes": ()}, "at least one"), ({"batches": (1, 0)}, "batch size"),
                          ({"sizes": (1, 99)}, "size must be at most"),
                          ({"n": throughput.MAX_JOBS, "sizes": (1, 8), "batches": (1, 4, 16)}, "at most")):
        with pytest.raises(jobs.BadInput, match=named):
            throughput.sweep(native_conn, queue, **kwargs)
    assert everything(native_conn) == before


def test_a_worker_killed_holding_a_batch_strands_it_until_the_reap(either, queue):
    # a lease no loaded machine outlives between the worker's claim and the first reap after its death
    s = throughput.stranded(either, queue, batch=6, lease_ms=3_000)
    assert s.exit_signal == signal.SIGKILL and len(set(s.claimed)) == 6
    assert sorted(s.active_after_death) == sorted(s.claimed)  # all six leases held by a dead worker
    assert s.reaped_early == []  # nothing lapsed yet: the reap leaves a running lease alone
    assert sorted(s.reaped) == sorted(s.claimed) and set(s.claimed) <= set(s.pending_after)
    assert len(s.pending_after) == 12 and s.waited_ms >= 3_000
    assert jobs.claim(either, queue, 1000) is None  # the queue was dropped again


def test_stranded_refuses_bad_input_and_writes_nothing(either, queue):
    before = everything(either)
    for kwargs, named in (({"batch": 0}, "batch size"), ({"lease_ms": 0}, "lease_ms"),
                          ({"lease_ms": throughput.MAX_LEASE_MS + 1}, "lease_ms must be at most"),
                          ({"jobs_in_queue": 0}, "jobs_in_queue")):
        with pytest.raises(jobs.BadInput, match=named):
            throughput.stranded(either, queue, **kwargs)
    assert everything(either) == before


def test_a_drain_is_a_record_of_its_figures():
    d = Drain(wire=6, size=1, batch=4, jobs=1000, seconds=0.5, trips=250, command_us=5_000.0, cpu_us=100_000.0,
              calls={})
    assert (d.jobs_per_s, d.wall_us, d.trips_per_job) == (2000.0, 500.0, 0.25)
    assert (d.command_share, d.cpu_share) == (0.01, 0.2)
