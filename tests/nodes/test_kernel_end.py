"""What a kernel made ends with it, and a stopped node answers in one line (issue 22, items 2 and 5).

Real kernels (jupyter_client), each with a temporary directory of its own
(``TMPDIR``), so "nothing left" is the directory's listing before and after.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from conftest import alive, wait_gone

jupyter_client = pytest.importorskip("jupyter_client")



class Kernel:
    """A real IPython kernel in ``tmpdir``; ``run`` answers the cell's reply, its printed text and its errors."""

    def __init__(self, tmpdir: Path) -> None:
        self.km = jupyter_client.KernelManager(kernel_name="python3")
        self.km.start_kernel(env={**os.environ, "TMPDIR": str(tmpdir)}, cwd=os.getcwd())
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.pid = int(self.run("import os; print(os.getpid())")[1])

    def run(self, code: str) -> tuple[dict, str, list[dict]]:
        out: list[str] = []
        errors: list[dict] = []

        def hook(msg: dict) -> None:
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                errors.append(msg["content"])

        reply = self.kc.execute_interactive(code, timeout=120, output_hook=hook)
        return reply["content"], "".join(out), errors

    def shutdown(self) -> str:
        """Jupyter's own shutdown (a request, SIGTERM after a few seconds): answers how the kernel ended."""
        self.kc.stop_channels()
        self.km.shutdown_kernel()
        return self.km._shutdown_status.name

    def kill(self) -> None:
        """Whatever a failed test left: the kernel, by its PID."""
        if alive(self.pid):
            os.kill(self.pid, signal.SIGKILL)
        try:
            self.kc.stop_channels()
            self.km.cleanup_resources()
        except Exception:  # noqa: BLE001
            pass


START = """
import json, os
from echomq_teach import start_node
from echomq_teach.lab.run import Run
node = start_node()
durable = start_node(durable=True)
run = Run(node, "q", workers=2, timeout=30)
run.produce(20)
run.start()
kept = Run(durable, "k", workers=1, timeout=30, folder=KEPT)  # a folder the learner named: kept
kept.produce(3)
kept.start()
pids = [node.pid, durable.pid] + [w.pid for w in run.all + kept.all]
print(json.dumps({"pids": pids, "made": sorted(os.listdir(os.environ["TMPDIR"]))}))
"""


def test_a_kernel_that_ends_leaves_nothing_in_the_temporary_directory(tmp_path: Path) -> None:
    tmpdir, kept = tmp_path / "tmp", tmp_path / "kept-run"
    tmpdir.mkdir()
    before = sorted(os.listdir(tmpdir))
    k = Kernel(tmpdir)
    try:
        reply, text, _ = k.run(START.replace("KEPT", repr(str(kept))))
        assert reply["status"] == "ok", reply
        seen = json.loads(text.strip().splitlines()[-1])
        made = seen["made"]
        # the kernel did make things there: two node folders and the run's history folder
        assert sum(m.startswith("echomq-node-") for m in made) == 2, made
        assert sum(m.startswith("echomq-run-") for m in made) == 1, made
        assert all(alive(p) for p in seen["pids"]), "a node or a worker was not running before the end"
        ended = k.shutdown()
        # it ended on its own when asked, not by the SIGTERM Jupyter sends a kernel that lingers
        assert ended == "ShutdownRequest", ended
        assert wait_gone([k.pid, *seen["pids"]], 10) == [], "a process outlived its kernel"
        assert sorted(os.listdir(tmpdir)) == before, "the kernel left things in its temporary directory"
        assert (kept / "producer.jsonl").exists(), "the learner's own run folder is kept"
    finally:
        k.kill()


def test_sigterm_also_ends_what_the_kernel_made(tmp_path: Path) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    k = Kernel(tmpdir)
    try:
        reply, text, _ = k.run("from echomq_teach import start_node\nnode = start_node()\nprint(node.pid)")
        assert reply["status"] == "ok", reply
        server = int(text.split()[-1])
        assert [p.name for p in tmpdir.iterdir()][0].startswith("echomq-node-")
        os.kill(k.pid, signal.SIGTERM)
        assert wait_gone([k.pid, server], 15) == []
        assert list(tmpdir.iterdir()) == [], "SIGTERM left the node's folder"
    finally:
        k.kill()


STOPPED = """
from echomq_teach import start_node
node = start_node()
conn = node.connector()
raw = node.client()
node.stop()
"""


def test_a_stopped_node_answers_a_rerun_cell_in_one_line(tmp_path: Path) -> None:
    k = Kernel(tmp_path)
    try:
        assert k.run(STOPPED)[0]["status"] == "ok"
        for cell in ('conn.call("PING")', "raw.ping()"):
            reply, _, errors = k.run(cell)
            assert reply["status"] == "error", (cell, reply)
            assert len(errors) == 1 and len(errors[0]["traceback"]) == 1, (cell, errors)
            line = errors[0]["traceback"][0]
            assert "was stopped" in line and "node = start_node()" in line, line
        # the call it names brings a node back, and the cells that use it run again
        reply, text, errors = k.run("node = start_node()\nconn = node.connector()\nprint(conn.call('PING'))")
        assert reply["status"] == "ok" and errors == [] and "True" in text, (reply, errors)
        # any other refused connection keeps its whole traceback: only a node stopped here is explained
        reply, _, errors = k.run(
            "import redis\nfrom echomq_teach.nodes.host import free_port\n"
            "redis.Redis(port=free_port(), socket_connect_timeout=2).ping()"
        )
        assert reply["status"] == "error" and len(errors) == 1, errors
        assert len(errors[0]["traceback"]) > 1 and "was stopped" not in "".join(errors[0]["traceback"])
        assert errors[0]["ename"] == "ConnectionError"
    finally:
        k.shutdown()
        k.kill()
