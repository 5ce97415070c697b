"""executor_cost: both executors' server time per call, read from INFO commandstats on a native node."""

from __future__ import annotations

import pytest

from echomq_teach.errors import WireError
from echomq_teach.lab import executor_cost
from echomq_teach.nodes.local import LocalNode


@pytest.fixture(scope="module")
def native_node():
    n = LocalNode(native=True)
    yield n
    n.stop()


def test_every_leg_is_measured_on_both_executors_and_the_node_is_left_as_it_was(native_node):
    conn = native_node.connector()
    raw = conn.client
    raw.set("bystander", "kept")
    pings = [raw.ping() for _ in range(3)]
    before = raw.info("commandstats")["cmdstat_ping"]["calls"]
    keys_before = sorted(raw.keys("*"))
    costs = executor_cost.measure(conn, n=60, legs=("claim", "complete", "fail"), windows=3)
    assert [c.leg for c in costs] == ["claim", "complete", "fail"]
    assert [(c.script, c.native) for c in costs] == [
        ("@claim2", "EMQ.CLAIM"),
        ("@complete", "EMQ.COMPLETE"),
        ("@retry", "EMQ.FAIL"),
    ]
    for c in costs:
        assert c.calls == 60 and c.script_us > 0 and c.native_us > 0
        assert c.ratio == c.native_us / c.script_us
        # each executor's figure is its median window; the pairs of windows ran side by side
        assert len(c.script_windows) == len(c.native_windows) == len(c.window_ratios) == 3
        assert c.script_us == sorted(c.script_windows)[1] and c.native_us == sorted(c.native_windows)[1]
        # the script's redis.calls are counted under their own names; the module calls no command
        assert c.script_inner >= 5 and c.native_inner == 0
    assert costs[0].script_inner == 7  # @claim2: ZPOPMIN EXISTS HINCRBY HSET TIME ZADD HGET
    # the counters were read, never reset, and the measuring queues are gone again
    assert all(pings) and raw.info("commandstats")["cmdstat_ping"]["calls"] == before
    assert sorted(raw.keys("*")) == keys_before and raw.get("bystander") == "kept"
    report = executor_cost.report(costs)
    assert report.count("\n") == 3 and "EMQ.CLAIM" in report and "native/script" in report
    conn.close()


def test_a_scripted_node_cannot_be_measured():
    node = LocalNode()
    try:
        conn = node.connector()
        with pytest.raises(WireError, match="trafikey"):
            executor_cost.measure(conn, n=10, windows=1)
        assert conn.client.dbsize() == 1  # the brand only: nothing was written
        conn.close()
    finally:
        node.stop()


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"n": 0}, "n must be a positive multiple of windows"),
        ({"windows": 0}, "n must be a positive multiple of windows"),
        ({"n": 10, "windows": 3}, "n must be a positive multiple of windows"),
        ({"legs": ("complete",)}, "legs must start with 'claim'"),
        ({"legs": ("claim", "nap")}, "legs must start with 'claim'"),
        ({"legs": ("claim", "complete", "complete")}, "at most once"),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_sent(native_node, kwargs, words):
    conn = native_node.connector()
    conn.clear_trace()
    with pytest.raises(ValueError, match=words):
        executor_cost.measure(conn, **kwargs)
    assert conn.last(5) == []
    conn.close()
