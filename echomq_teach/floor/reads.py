"""Reads from the floor alone: they need no node, and answer after the stream was trimmed or lost.

Each takes the floor and the queue (the floor of a deployment may hold several
queues' streams). Times are server milliseconds, the clock the stream ids carry.
"""

from __future__ import annotations

from typing import Any

from ..completions import Settle, completions_stream
from ..jobs import OUTCOMES, check_id
from ..keyspace import check_queue
from .embedded import Floor

COUNTS_SQL = "SELECT outcome, COUNT(*) FROM settles WHERE stream = ? GROUP BY outcome"
THROUGHPUT_SQL = (
    "SELECT settled_ms / ? * ? AS b, outcome, COUNT(*) FROM settles WHERE stream = ? GROUP BY b, outcome ORDER BY b"
)
BY_JOB = ("job_id = ?", "settles_by_job")
# one line style per outcome, in OUTCOMES' order
_STYLES = ("-o", "-x", "-s", "-^", "-d")
IN_RANGE = "settled_ms >= ? AND settled_ms < ?"


def _stream(queue: str) -> str:
    return completions_stream(check_queue(queue))


def by_job(floor: Floor, queue: str, job_id: str) -> list[Settle]:
    """Every settle of one job id, oldest first (a dead job that was reprocessed may settle again)."""
    return floor.settles(_stream(queue), BY_JOB[0], (check_id(job_id),), index=BY_JOB[1])


def in_range(floor: Floor, queue: str, start_ms: int, end_ms: int) -> list[Settle]:
    """The settles recorded from ``start_ms`` up to, not including, ``end_ms``."""
    return floor.settles(_stream(queue), IN_RANGE, (int(start_ms), int(end_ms)))


def counts(floor: Floor, queue: str) -> dict[str, int]:
    """How many endings of each outcome the floor holds, every outcome named: ``{"completed": n, "dead": m, …}``."""
    rows = floor.db.execute(COUNTS_SQL, (_stream(queue),)).fetchall()
    found = dict(rows)
    return {o: int(found.get(o, 0)) for o in OUTCOMES}


def throughput(floor: Floor, queue: str, bucket_ms: int = 1_000) -> list[tuple[int, dict[str, int]]]:
    """Endings per time bucket: ``[(bucket start ms, {"completed": n, "dead": m, …}), …]``, empty buckets included."""
    rows = floor.db.execute(THROUGHPUT_SQL, (bucket_ms, bucket_ms, _stream(queue))).fetchall()
    if not rows:
        return []
    by_bucket: dict[int, dict[str, int]] = {}
    for b, outcome, n in rows:
        by_bucket.setdefault(int(b), dict.fromkeys(OUTCOMES, 0))[outcome] = int(n)
    first, last = min(by_bucket), max(by_bucket)
    return [(b, by_bucket.get(b, dict.fromkeys(OUTCOMES, 0))) for b in range(first, last + bucket_ms, bucket_ms)]


def plot_throughput(floor: Floor, queue: str, bucket_ms: int = 1_000, ax: Any = None) -> Any:
    """A matplotlib figure of endings per bucket over time, one line per outcome the floor holds; answers the Figure."""
    import matplotlib.pyplot as plt

    series = throughput(floor, queue, bucket_ms)
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 3))
    else:
        fig = ax.figure
    t0 = series[0][0] if series else 0
    xs = [(b - t0) / 1000 for b, _ in series]
    # completed and dead always; the rarer endings only when the archive holds one
    shown = [o for o in OUTCOMES if o in ("completed", "dead") or any(c[o] for _, c in series)]
    for outcome in shown:
        style = _STYLES[OUTCOMES.index(outcome)]
        ax.plot(xs, [c[outcome] for _, c in series], style, label=outcome, markersize=3)
    ax.set_xlabel("seconds since the first archived settle")
    ax.set_ylabel(f"settles per {bucket_ms / 1000:g} s")
    ax.set_title(f"queue {queue!r}: throughput, read from the floor alone")
    ax.legend()
    fig.tight_layout()
    return fig
