"""The diagnose and repair exercises as a classroom student runs them: on a shared node (cluster mode, the class's
limits), as an ACL user confined to her namespace. Each reference passes there (the setups deal their stories,
the checks read, fork and clean up with nothing her user may not do), and each check leaves her keyspace as it
found it: a class's shared node does not pile up the checks' queues."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import pytest

from echomq_teach import start_node
from echomq_teach.classroom import compose, provision
from echomq_teach.course import exercises
from echomq_teach.nodes.host import free_port
from echomq_teach.nodes.local import LocalNode

SOLUTIONS = Path(__file__).resolve().parents[2] / "notebooks" / "solutions"
#: the diagnoses and repairs of 01-05 on the scripted node (04's want the native twin; 08 and 10 run on a laptop)
KEYS = ("01.1", "01.2", "02.3", "03.1", "03.2", "03.5", "05.3")


@pytest.fixture(scope="module")
def student(tmp_path_factory):
    node = LocalNode(extra_config={**compose.protection(maxmemory="256mb", maxclients=200),
                                   **compose.cluster_mode(bus_port=free_port())})
    admin = node.client()
    try:
        (ann,) = provision.provision_names(admin, ["ann"])
        yield admin, ann
    finally:
        admin.close()
        node.stop()


def _solution(key: str):
    (path,) = SOLUTIONS.glob(key.replace(".", "_") + "_*.py")
    spec = importlib.util.spec_from_file_location(f"solution_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (fn,) = [f for _, f in inspect.getmembers(module, inspect.isfunction) if f.__module__ == module.__name__]
    return fn


def test_each_reference_passes_as_a_student_and_leaves_her_keyspace_as_it_was(student, monkeypatch):
    admin, ann = student
    for k, v in ann.env.items():
        monkeypatch.setenv(k, v)
    conn = start_node().connector()
    try:
        before = set(admin.keys("*"))
        for key in KEYS:
            verdict = exercises.check(key, _solution(key), conn)
            assert verdict.ok, str(verdict)
            assert set(admin.keys("*")) == before, key
    finally:
        conn.close()
