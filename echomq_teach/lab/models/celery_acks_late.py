"""Case 2 — celery with late acks acknowledges a task whose pool child was killed.

The report (celery #1628, PRs #2840 and #3053): with ``acks_late`` the worker
acknowledges a task only after it ran, so that a crash brings it back. But when
the pool child running the task dies (the OOM killer, SIGKILL), the parent
acknowledges it anyway, on purpose: a task that kills its child would
otherwise loop. The message is gone; the task never finished.
"""

from __future__ import annotations

import os
from typing import Any

from .base import run_payload
from .kombu_restore import KombuRestore


class CeleryAcksLate(KombuRestore):
    name = "celery_acks_late"
    kill_target = "child"  # the nemesis's kill hits the pool child that runs the task

    def beat(self, w: Any) -> bool:
        got = w.rec.call("claim", lambda: self.fetch(w.r, w.name), shape=lambda g: {"job": g[0], "token": g[2]}
                         if g else {}, extra={"lease_ms": self.lease_ms})
        if got is None:
            return False
        job, payload, token = got
        w.rec.note("run", job=job, token=token)
        pid = os.fork()  # the prefork pool: the task runs in a child process
        if pid == 0:
            os._exit(0 if run_payload(payload) else 1)
        with open(w.child_file(), "w") as f:
            f.write(str(pid))
        _, status = os.waitpid(pid, 0)
        os.unlink(w.child_file())
        if os.WIFSIGNALED(status):
            # the child was lost: late ack or not, the message is acknowledged, with no ending
            w.rec.note("worker-lost", job=job, token=token, signal=os.WTERMSIG(status))
            w.rec.call("ack-lost", lambda: self.forget(w.r, job), job=job, token=token)
            return True
        w.rec.note("ran", job=job, token=token, outcome="value")
        self.settle(w, job, token, os.WEXITSTATUS(status) == 0)
        return True

    def forget(self, r: Any, job: str) -> str:
        """The acknowledgement of a lost task: the broker's copy goes, and no result is written."""
        p = r.pipeline(transaction=True)
        p.zrem(self.key("unacked_index"), job)
        p.hdel(self.key("unacked"), job)
        p.execute()
        return "acked"


Model = CeleryAcksLate
