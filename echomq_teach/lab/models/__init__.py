"""Case files: models of real failures of other job queues, run under the lab's nemesis and judged.

Each module models one public report's mechanism on a real node (``base.Model``):

* ``kombu_restore`` — a visibility timeout restores a message still running;
* ``celery_acks_late`` — a task whose pool child was killed is acknowledged anyway;
* ``sidekiq_orphans`` — orphans recovered only when a process starts;
* ``bull_stall_scan`` — a stall check that reads in one round trip and takes in another;
* ``bullmq_flow_release`` — a child's failure releases its parent with siblings pending;
* ``bullmq_evicted_locks`` — lock keys with a TTL evicted under ``volatile-lru``.

``trial`` runs one case's workload twice under the same seeded nemesis — on the
model, then on this queue — and judges both with the lab's checker.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import Model

#: the cases, in the order the notebook tells them
CASES = ("kombu_restore", "celery_acks_late", "sidekiq_orphans", "bull_stall_scan", "bullmq_flow_release",
         "bullmq_evicted_locks")


def module(case: str) -> Any:
    """The case's module (its docstring is the report, its ``Model`` the mechanism)."""
    if case not in CASES:
        from ...errors import BadInput

        raise BadInput(f"unknown case {case!r}: the cases are {CASES}")
    return importlib.import_module(f"{__name__}.{case}")


def model_for(case: str, queue: str, lease_ms: int, **params: Any) -> Model:
    return module(case).Model(queue, lease_ms, **params)


__all__ = ["CASES", "Model", "model_for", "module"]
