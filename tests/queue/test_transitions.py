"""Another script in a transition's place (``transitions.ScriptSet``): the seam the builders open.

Each builder's keys and arguments are held to the page's own table in
``test_page_shapes.py``. Here the seam is exercised, on both wires:

* the kit's own scripts, passed explicitly (read from their files, every
  transition), drain a Pool's usual work to the same end state as the kit's
  connector; on wire 6 every call then runs its script, never the native
  command;
* a deliberately different claim (the newest job first) runs in claim's place
  for claim/3, a consumer's beat and a Pool's pipelined lane (its forks keep
  the set), while the kit's connector beside it still claims the oldest; the
  pause flag still holds it back (the host reads it where ``EMQ.CLAIM`` no
  longer does), and a SCRIPT FLUSH loads it again, not the kit's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pool_support import end_state, handler, land_work

import echomq_teach
from echomq_teach import Connector, jobs, scripts, snapshots, transitions
from echomq_teach.connector import connect
from echomq_teach.consumer import Consumer, Pool
from echomq_teach.errors import BadInput
from echomq_teach.transitions import ScriptSet

LUA = Path(echomq_teach.__file__).parent / "lua"


def kit_explicitly() -> ScriptSet:
    """The kit's own script for every transition, read from its file: the set the kit runs, named."""
    return ScriptSet({t: scripts.from_file(LUA / f"{name}.lua") for t, name in transitions.SCRIPTS.items()})


def newest_first() -> scripts.Script:
    """@claim2 with one word changed: it pops the newest pending job, not the oldest."""
    source = scripts.load("claim2").source
    assert source.count("'ZPOPMIN'") == 1
    return scripts.from_source("claim_newest", source.replace("'ZPOPMIN'", "'ZPOPMAX'"))


def with_set(c: Connector, script_set: ScriptSet) -> Connector:
    return connect(c.address, wire=c.wire, node=c.node, script_set=script_set)


def drain(conn: Connector, q: str) -> tuple[dict[str, object], set[str]]:
    """The pools' usual work drained (the stall sweep as recovery); the end state, and every command sent."""
    land_work(conn, q)
    pool = Pool(conn, q, handler, size=2, metronome_ms=5, recovery="stalled", retry_delay_ms=1, max_attempts=2,
                record=True, idle_sleep_ms=2)
    try:
        report = pool.run(timeout=60, until_idle=True)
    finally:
        pool.close()
    assert report.errors == [] and report.stopped_by == "idle", report
    sent = {str(e.args[0]) for c in [*pool.consumers, pool.metronome] for e in c.conn.trace}
    return end_state(conn, q), sent


def test_the_kits_scripts_passed_explicitly_drain_as_the_kit_does(either: Connector, queue: str) -> None:
    explicit = with_set(either, kit_explicitly())
    try:
        kit_end, kit_sent = drain(either, queue + "-kit")
        own_end, own_sent = drain(explicit, queue + "-explicit")
    finally:
        explicit.close()
    assert own_end == kit_end
    native = {c for c in kit_sent if c.startswith("EMQ.")}
    assert bool(native) == either.native  # the kit's connector takes the native twins on wire 6
    assert not {c for c in own_sent if c.startswith("EMQ.")}  # a script in a transition's place: never
    assert "EVALSHA" in own_sent


def test_a_different_claim_runs_in_claims_place(either: Connector, queue: str) -> None:
    mine = with_set(either, ScriptSet({"claim": newest_first()}))
    done: list[str] = []

    def note(job: jobs.Claimed) -> str:
        done.append(job.id)
        return "done"

    try:
        ids = [jobs.enqueue(either, queue, f"job {i}", job_id=f"JOB{i}") for i in range(5)]
        got = jobs.claim(mine, queue, 30_000)
        assert got is not None and got.id == ids[-1]
        last = mine.last(1)[0]
        assert (last.args[0], last.script) == ("EVALSHA", "@claim_newest")
        assert jobs.claim(either, queue, 30_000).id == ids[0]  # the kit's connector beside it: the oldest
        Consumer(mine, queue, note).beat()
        assert done == [ids[3]]
        pool = Pool(mine, queue, note, size=1, metronome_ms=5, idle_sleep_ms=2)
        try:
            report = pool.run(max_jobs=2, timeout=30)
        finally:
            pool.close()
        assert report.settled == 2 and done == [ids[3], ids[2], ids[1]]
        lane = pool.consumers[0].conn.trace
        assert "@claim_newest" in {e.script for e in lane} and "EMQ.CLAIM" not in {e.args[0] for e in lane}

        # paused: claim/3 reads the flag and sends no claim; so does the lane, where EMQ.CLAIM read it inside
        jobs.enqueue(either, queue, "held", job_id="JOBheld")
        jobs.pause(either, queue)
        assert jobs.claim(mine, queue, 30_000) is None and mine.last(1)[0].args[0] == "EXISTS"
        pool = Pool(mine, queue, note, size=1, metronome_ms=5, idle_sleep_ms=2)
        try:
            assert pool.run(max_jobs=1, timeout=0.5).settled == 0
        finally:
            pool.close()
        jobs.resume(either, queue)

        # the node's script cache flushed: the connector loads the script in claim's place again, not the kit's
        either.call("SCRIPT", "FLUSH")
        assert jobs.claim(mine, queue, 30_000).id == "JOBheld"
        assert [e.args[:2] for e in mine.last(3)] == [["EVALSHA", newest_first().sha],
                                                      ["SCRIPT", "LOAD"], ["EVALSHA", newest_first().sha]]
        assert mine.last(2)[0].args[2] == newest_first().source
    finally:
        mine.close()
    assert snapshots.snapshot(either, queue).where("JOBheld") == ["active"]


def test_a_script_set_refuses_what_it_cannot_run(tmp_path: Path, conn: Connector) -> None:
    with pytest.raises(BadInput, match="unknown transition 'clam'"):
        ScriptSet({"clam": newest_first()})
    with pytest.raises(BadInput, match="must be a scripts.Script"):
        ScriptSet({"claim": "return 1"})  # type: ignore[dict-item]
    with pytest.raises(BadInput, match="no Lua file"):
        ScriptSet.from_files({"claim": tmp_path / "none.lua"})
    with pytest.raises(BadInput, match="is empty"):
        scripts.from_source("blank", "  \n")
    with pytest.raises(BadInput, match="no include 'nothing_here'"):
        scripts.from_source("mine", "-- @include nothing_here\nreturn 1\n")
    with pytest.raises(BadInput, match="script_set must be a transitions.ScriptSet"):
        connect(conn.address, script_set={"claim": newest_first()})  # type: ignore[arg-type]
    # the files a run hands its workers read back as the same scripts
    mine = ScriptSet({"claim": newest_first()})
    again = ScriptSet.from_files(mine.files(tmp_path / "scripts"))
    assert again.script("claim").sha == newest_first().sha and again.script("complete") == scripts.load("complete")
    assert again.replaces("claim") and not again.replaces("complete", "retry")
