"""A fault run with other scripts in their transitions' places (``Run(scripts=…)``), judged as the kit's is.

Every transition the run makes is handed over explicitly, each the kit's own
file, but for two that count themselves as they run: a claim (the workers',
in processes of their own, told by ``WorkerOptions.scripts``) and a promote
(the run's metronome, in this process). A SCRIPT FLUSH halfway through makes
every process load them again. The counts match the history's calls, so each
process ran the script in the transition's place, and the checker finds the
run valid. On wire 6, where the kit would send the native commands.
"""

from __future__ import annotations

from pathlib import Path

from conftest import wait_for

import echomq_teach
from echomq_teach import Connector, jobs, keyspace, scripts, transitions
from echomq_teach.lab.run import Run
from echomq_teach.transitions import ScriptSet

LUA = Path(echomq_teach.__file__).parent / "lua"


def counted(name: str, before: str, counter: str) -> scripts.Script:
    """The kit's ``name`` with one line before ``before``: INCR ``<base><counter>`` each time it gets there."""
    source = scripts.load(name).source
    assert source.count(before) == 1, before
    count = f"redis.call('INCR', KEYS[3] .. '{counter}')\n"
    return scripts.from_source(f"{name}_counted", source.replace(before, count + before))


def test_a_run_runs_the_scripts_it_is_given_in_every_process(native_conn: Connector, queue: str) -> None:
    given = {t: scripts.from_file(LUA / f"{name}.lua") for t, name in transitions.SCRIPTS.items()}
    given["claim"] = counted("claim2", "return {id,", "seam:claims")  # a job handed out
    given["promote"] = counted("promote", "local bad = refuse_positive('limit'", "seam:promotes")  # every call
    with Run(native_conn.node, queue, workers=2, lease_ms=2_000, work_ms=1, tick_ms=20, timeout=60,
             scripts=ScriptSet(given)) as run:
        assert sorted(run.options.scripts or {}) == sorted(transitions.SCRIPTS)
        run.produce(40)
        run.start()
        assert run.conn.script_set.replaces("claim") and run.wire == 6
        # halfway, the node forgets every script: each process loads what it was given again
        wait_for(lambda: run.settled() >= 20, "half the jobs settled")
        run.script_flush()
        assert run.wait_drained(timeout=30)
        run.stop()
        history = run.history()
        report = run.check()
        base = keyspace.base(queue)
        claims = int(run.conn.client.get(base + "seam:claims") or 0)
        promotes = int(run.conn.client.get(base + "seam:promotes") or 0)
        jobs.drop(run.conn, queue)
    assert report.valid, report.summary()
    assert report.completed == 40
    handed_out = [o for o in history.calls("claim") if o.ok and o.job]
    assert claims == len(handed_out) >= 40
    assert promotes == len([o for o in history.calls("promote") if o.ok]) > 0

