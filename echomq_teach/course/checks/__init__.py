"""The checks of the exercises in notebooks 01–05 and 07, one module per notebook.

Each module registers its exercises with ``echomq_teach.course.exercises`` when it is
imported (``exercises`` imports this package). A check reads the real node and
names what is not yet true; it never prints its hint, and a prediction's check
tells the run's answer only after a try.
"""

from __future__ import annotations

from . import claim_and_lease, completion_and_recovery, flows, lifecycle, two_executors, when_things_fail

__all__ = ["claim_and_lease", "completion_and_recovery", "flows", "lifecycle", "two_executors", "when_things_fail"]
