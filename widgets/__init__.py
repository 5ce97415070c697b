"""echomq_widgets — the course widgets, each driving the real kit and redrawn from real snapshots.

* ``SetView(conn, queue)`` — the four sets with scores read against server now, the rows, the last diff.
* ``LifecycleStepper(conn_or_node, queue=None, path="happy")`` — one job across the sets, one call per step.
* ``FlowComposer(conn)`` — land a flow, settle its children, watch ``:dependencies`` tick to zero.
* ``CounterPlot(conn=None, queue=None)`` — set sizes per step or over time.
* ``ExecutorView(scripted_conn, native_conn)`` — the same step on both executors, side by side.
* ``ChaosView(node, workers=4)`` — worker processes drain a queue while you kill, freeze, thaw and
  restart; the set sizes live, the checker's verdict and the timeline when it drains.

The logic lives in plain classes (``steps.Lifecycle``, ``flow_model.FlowRun``,
``compare.ExecutorRun``, ``counter.SizeSeries``, ``chaos_model.ChaosRun``) that test without a browser.
"""

from __future__ import annotations

from .chaos import ChaosView
from .chaos_model import ChaosRun
from .composer import FlowComposer
from .counter import CounterPlot, SizeSeries
from .executors import ExecutorView
from .flow_model import FlowRun
from .setview import SetView
from .stepper import LifecycleStepper
from .steps import PATHS, Lifecycle, Settings

__all__ = [
    "PATHS",
    "ChaosRun",
    "ChaosView",
    "CounterPlot",
    "ExecutorView",
    "FlowComposer",
    "FlowRun",
    "Lifecycle",
    "LifecycleStepper",
    "SetView",
    "Settings",
    "SizeSeries",
]
