"""The checks of the course's exercises, one module per notebook.

Each module registers its exercises in ``echomq_teach.course.registry`` when it is
imported (``exercises`` imports this package; nothing here imports ``exercises``).
A check reads the real node and names what is not yet true; it never prints its
hint, and a prediction's run is shown only after the prediction is kept.
"""

from __future__ import annotations

from . import (
    case_files,
    claim_and_lease,
    cluster,
    completion_and_recovery,
    durable_floor,
    flows,
    lifecycle,
    two_executors,
    when_things_fail,
    workshop,
)

__all__ = ["case_files", "claim_and_lease", "cluster", "completion_and_recovery", "durable_floor", "flows", "lifecycle",
           "two_executors", "when_things_fail", "workshop"]
