"""echomq_widgets — the course widgets, each driving the real kit and redrawn from real snapshots.

* ``SetView(conn, queue)`` — the four sets with scores read against server now, the rows, the last diff.
* ``LifecycleStepper(conn_or_node, queue=None, path="happy")`` — one job across the sets, one call per step.
* ``FlowComposer(conn)`` — land a flow, settle its children, watch ``:dependencies`` tick to zero.
* ``CounterPlot(conn=None, queue=None)`` — set sizes per step or over time.
* ``ExecutorView(scripted_conn, native_conn)`` — the same step on both executors, side by side.

The logic lives in plain classes (``steps.Lifecycle``, ``flow_model.FlowRun``,
``compare.ExecutorRun``, ``counter.SizeSeries``) that test without a browser.
The widgets use the queue's core, the nodes and the lab (the chaos view runs
the lab's worker processes and draws its verdict).
"""

from __future__ import annotations

import importlib
from typing import Any

# each name from its module, imported on first use: a notebook that only steps (SetView,
# LifecycleStepper) does not pay for matplotlib, which the plots import (about a second a kernel)
_WHERE = {
    "ChaosView": "chaos",
    "ChaosRun": "chaos_model",
    "FlowComposer": "composer",
    "CounterPlot": "counter",
    "SizeSeries": "counter",
    "ExecutorView": "executors",
    "FlowRun": "flow_model",
    "SetView": "setview",
    "LifecycleStepper": "stepper",
    "PATHS": "steps",
    "Lifecycle": "steps",
    "Settings": "steps",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'echomq_widgets' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # once: the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
