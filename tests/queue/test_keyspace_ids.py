"""The keyspace (every key of a queue shares its hashtag) and the ids (D-2 in docs/decisions.md)."""

from __future__ import annotations

import multiprocessing as mp
import os
import string

import pytest

from echomq_teach import BadInput, ids, jobs, keyspace


# -- keyspace -----------------------------------------------------------------------------------
def test_base_and_queue_keys_follow_the_page() -> None:
    assert keyspace.base("q") == "emq:{q}:"
    assert keyspace.queue_key("q", "pending") == "emq:{q}:pending"
    assert keyspace.queue_key("q", "") == "emq:{q}:"
    assert keyspace.job_key("q", "JOB0KHTOWnGLuC") == "emq:{q}:job:JOB0KHTOWnGLuC"
    assert keyspace.job_key("q", "JOB1", "dependencies") == "emq:{q}:job:JOB1:dependencies"
    assert keyspace.SETS == ("pending", "active", "schedule", "dead")
    assert keyspace.VERSION_KEY == "{emq}:version"


def test_every_queue_key_shares_the_hashtag() -> None:
    # one queue lives in one cluster slot: every key's hashtag is the queue name
    q = "orders.eu-1"
    keys = [keyspace.queue_key(q, s) for s in (*keyspace.SETS, "paused", "metrics:completed", "stream:completions")]
    keys += [keyspace.job_key(q, "JOB1"), keyspace.job_key(q, "JOB1", "processed")]
    assert {keyspace.queue_of(k) for k in keys} == {q}
    # and the brand sits in its own slot, outside every queue
    assert keyspace.queue_of(keyspace.VERSION_KEY) == "emq"


def test_queue_of_refuses_a_key_without_hashtag() -> None:
    with pytest.raises(BadInput, match="hashtag"):
        keyspace.queue_of("emq:q:pending")


def test_check_queue_accepts_a_name_at_the_byte_limit() -> None:
    name = "a" * keyspace.MAX_QUEUE_BYTES
    assert keyspace.check_queue(name) == name
    # the limit counts bytes, not characters: 100 two-byte characters is exactly 200
    assert keyspace.check_queue("é" * 100) == "é" * 100
    with pytest.raises(BadInput, match="201 bytes"):
        keyspace.check_queue("é" * 100 + "a")


# -- ids ------------------------------------------------------------------------------------------
def test_alphabet_is_ascii_ordered_base62() -> None:
    assert ids.ALPHABET == string.digits + string.ascii_uppercase + string.ascii_lowercase
    assert list(ids.ALPHABET) == sorted(ids.ALPHABET)
    assert len(ids.ALPHABET) == 62


def test_minted_id_shape() -> None:
    job_id = ids.mint()
    assert job_id.startswith("JOB")
    assert len(job_id) == 3 + 11
    assert ids.is_job_id(job_id)
    assert ids.is_job_id("JOB0KHTOWnGLuC")  # the page's own id
    for bad in ("JOB0KHTOWnGLu", "JOB0KHTOWnGLuCx", "job0KHTOWnGLuC", "JOB0KHTOWnGL-C", 14, None):
        assert not ids.is_job_id(bad)


def test_minted_id_is_a_valid_job_id_for_the_api() -> None:
    assert jobs.check_id(ids.mint())


def test_lexicographic_order_is_mint_order_including_within_one_millisecond() -> None:
    minted = [ids.mint() for _ in range(5000)]
    assert len(set(minted)) == len(minted)
    assert minted == sorted(minted)
    # the loop is fast enough that many ids share one clock part: the counter carries the order
    clock_parts = [m[3 : 3 + ids.CLOCK_WIDTH] for m in minted]
    assert len(set(clock_parts)) < len(minted), "expected several ids minted in one millisecond"


class _FrozenClock:
    """A stand-in for the ``time`` module that ids reads: one fixed (or stepping) millisecond."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def time_ns(self) -> int:
        return self.ms * 1_000_000


def test_many_ids_in_one_frozen_millisecond_keep_mint_order(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _FrozenClock(1_796_000_000_000)
    monkeypatch.setattr(ids, "time", clock)
    monkeypatch.setattr(ids, "_last_ms", -1)
    minted = [ids.mint() for _ in range(2000)]
    assert len({m[3:10] for m in minted}) == 1  # truly one millisecond
    assert minted == sorted(minted)
    assert len(set(minted)) == 2000


def test_clock_stepping_back_keeps_order(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _FrozenClock(1_796_000_000_500)
    monkeypatch.setattr(ids, "time", clock)
    monkeypatch.setattr(ids, "_last_ms", -1)
    first = ids.mint()
    clock.ms -= 400  # NTP steps the wall clock back
    second = ids.mint()
    clock.ms += 1000
    third = ids.mint()
    assert first < second < third


def test_counter_overflow_carries_into_the_next_millisecond(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _FrozenClock(1_796_000_000_000)
    monkeypatch.setattr(ids, "time", clock)
    monkeypatch.setattr(ids, "_last_ms", clock.ms)
    monkeypatch.setattr(ids, "_counter", ids._COUNTER_SPAN - 2)
    monkeypatch.setattr(ids, "_pid", os.getpid())
    minted = [ids.mint() for _ in range(4)]
    assert minted == sorted(minted)
    assert len(set(minted)) == 4
    assert minted[0][3:10] != minted[-1][3:10]  # the carry moved the clock part on


def _mint_some(n: int, out: mp.Queue) -> None:
    out.put([ids.mint() for _ in range(n)])


def test_forked_child_does_not_repeat_parent_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    # one frozen millisecond in both processes: without the fork guard the child would carry
    # on from the parent's counter and mint exactly the ids the parent mints next
    clock = _FrozenClock(1_796_000_000_000)
    monkeypatch.setattr(ids, "time", clock)
    monkeypatch.setattr(ids, "_last_ms", -1)
    before = [ids.mint() for _ in range(50)]
    ctx = mp.get_context("fork")
    out: mp.Queue = ctx.Queue()
    p = ctx.Process(target=_mint_some, args=(200, out))
    p.start()
    after = [ids.mint() for _ in range(200)]
    child = out.get(timeout=30)
    p.join(timeout=30)
    assert p.exitcode == 0
    assert len(child) == 200
    assert not set(child) & (set(before) | set(after))
