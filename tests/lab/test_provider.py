"""The payment provider of 07.2 (handlers.Context.charge): its timeouts and its idempotency keys, on a real node."""

from __future__ import annotations

import pytest

from echomq_teach import jobs
from echomq_teach.lab import handlers


def _claimed(conn, queue, payload):
    jobs.enqueue(conn, queue, payload)
    return jobs.claim(conn, queue, 30_000)


def test_a_timeout_after_the_money_was_taken_charges_again_without_a_key(conn, queue):
    ctx = handlers.Context(conn, queue, "w0")
    job = _claimed(conn, queue, "order 9!")
    with pytest.raises(handlers.ProviderTimeout):
        ctx.charge(job)  # the money is taken, then the answer times out
    assert handlers.charges(conn, queue)[job.id] == 1
    assert ctx.charge(job) is True  # asked again with no key: charged again
    assert handlers.charges(conn, queue)[job.id] == 2 and handlers.provider_calls(conn, queue) == {job.id: 2}


def test_a_timeout_before_the_money_charges_nothing_and_a_key_charges_once(conn, queue):
    ctx = handlers.Context(conn, queue, "w0")
    job = _claimed(conn, queue, "order 4?")
    with pytest.raises(handlers.ProviderTimeout):
        ctx.charge(job, key=job.id)
    assert handlers.charges(conn, queue)[job.id] == 0
    assert ctx.charge(job, key=job.id) is True
    assert ctx.charge(job, key=job.id) is False  # the same key: the provider takes nothing the second time
    assert handlers.charges(conn, queue)[job.id] == 1


def test_an_unmarked_order_never_times_out(conn, queue):
    ctx = handlers.Context(conn, queue, "w0")
    job = _claimed(conn, queue, "order 1")
    assert ctx.charge(job, key="k") is True and handlers.charges(conn, queue) == {job.id: 1}
