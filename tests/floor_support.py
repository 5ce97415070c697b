"""What the floor tests share: settles recorded on a real node, a driver run as a real process, direct counts.

``settle(conn, queue, n)`` runs the kit's recording Consumer over ``n`` jobs
(every tenth one dies), so the stream holds ``n`` entries of both outcomes.
``driver_process`` runs ``python -m echomq_teach.floor`` (the kit's
``DriverProcess``) with the node and, given a store, the remote in its environment.
``exactly_once`` is the direct count: every recorded settle is on the floor
once, and nothing else is.
"""

from __future__ import annotations

import collections
from pathlib import Path

from echomq_teach import floor
from echomq_teach.floor.process import DriverProcess
from echomq_teach.floor.workload import settle_jobs


def settle(conn, queue: str, n: int, start: int = 0) -> list[tuple[str, str]]:
    """Enqueue and settle ``n`` jobs with ``record=True``; answers [(job id, outcome)] in stream order."""
    settle_jobs(conn, queue, n, start=start)
    return stream_settles(conn, queue)[-n:]


def stream_settles(conn, queue: str) -> list[tuple[str, str]]:
    """(job id, outcome) of every settle the stream holds, in stream order (a foreign entry is left out)."""
    entries = conn.client.xrange(floor.completions_stream(queue))
    return [(fields["id"], fields["outcome"]) for _, fields in entries if "id" in fields]


def stream_ids(conn, queue: str) -> list[str]:
    return [eid for eid, _ in conn.client.xrange(floor.completions_stream(queue))]


def floor_settles(path: Path, queue: str) -> list[tuple[str, str]]:
    with floor.open_floor(path, readonly=True) as f:
        return [(s.job_id, s.outcome) for s in f.settles(floor.completions_stream(queue))]


def exactly_once(found: list[tuple[str, str]], want: list[tuple[str, str]]) -> None:
    """The direct count: each wanted settle appears once in ``found``, and ``found`` holds nothing else."""
    counts = collections.Counter(found)
    twice = {k: v for k, v in counts.items() if v > 1}
    assert not twice, f"archived more than once: {twice}"
    missing = set(want) - set(counts)
    assert not missing, f"lost: {sorted(missing)[:5]} ({len(missing)} in all)"
    extra = set(counts) - set(want)
    assert not extra, f"unexpected: {sorted(extra)[:5]}"
    assert len(found) == len(want)


def driver_process(node, queue: str, path: Path, *args: str, store=None, prefix: str = "floor") -> DriverProcess:
    return DriverProcess(node.address, queue, path, *args, remote_env=store.env(prefix) if store else None)
