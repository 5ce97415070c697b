"""The worker's options, written once (``lab.worker.WorkerOptions``): a JSON round trip, and bad options refused."""

from __future__ import annotations

import subprocess
import sys

import pytest

from echomq_teach import scripts
from echomq_teach.errors import BadInput
from echomq_teach.lab.worker import WorkerOptions
from echomq_teach.transitions import ScriptSet


def test_options_survive_the_json_round_trip():
    told = WorkerOptions("orders", "w0b", "/tmp/run", wire=6, lease_ms=250, handler="m:f", handler_path="/tmp/h",
                         work_ms=0, idle_ms=9, record=False, timeout=12.5, wait=(1, 100), batch=4)
    assert WorkerOptions.from_json(told.to_json()) == told


@pytest.mark.parametrize(("raw", "words"), [
    ('{"queue": "q", "name": "w", "history": "/tmp", "colour": "red"}', r"unknown worker options \['colour'\]"),
    ('{"queue": "q", "name": "w"}', "incomplete"),
    ('["q"]', "must be a JSON object"),
    ("{not json", "not JSON"),
    ('{"queue": "q", "name": "w", "history": "/tmp", "lease_ms": 0}', "lease_ms"),
    ('{"queue": "q", "name": "w", "history": "/tmp", "crash_at": "lunch"}', "crash_at must be one of"),
    ('{"queue": "q", "name": "w", "history": "/tmp", "crash_at": "settle-sent", "batch": 2}', "one-job workers"),
    ('{"queue": "q", "name": "w", "history": "/tmp", "wire": 5}', "wire must be 4 or 6"),
    ('{"queue": "q", "name": "w", "history": "/tmp", "scripts": {"clam": "/tmp/x.lua"}}', "unknown transition 'clam'"),
    ('{"queue": "q", "name": "w", "history": "/tmp", "scripts": {"claim": "/nowhere/claim.lua"}}', "no Lua file"),
    ('{"queue": "q", "name": "w", "history": "/tmp", "scripts": ["claim.lua"]}', "must map a transition"),
])
def test_bad_options_are_named(raw, words):
    with pytest.raises(BadInput, match=words):
        WorkerOptions.from_json(raw)


def test_scripts_in_a_transitions_place_travel_as_files(tmp_path):
    lua = tmp_path / "claim.lua"
    lua.write_text(scripts.load("claim2").source)
    told = WorkerOptions("q", "w0", str(tmp_path / "run"), scripts={"claim": str(lua)})
    assert WorkerOptions.from_json(told.to_json()) == told
    assert told.script_set().replaces("claim") and not told.script_set().replaces("complete")
    assert told.script_set().script("claim").sha == scripts.load("claim2").sha
    assert WorkerOptions("q", "w0", str(tmp_path / "run")).script_set() == ScriptSet()


def test_a_worker_process_told_bad_options_says_so_and_writes_nothing(tmp_path):
    raw = WorkerOptions("q", "w0", str(tmp_path / "run"), lease_ms=-1).to_json()
    done = subprocess.run([sys.executable, "-m", "echomq_teach.lab.worker", raw], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert "worker:" in done.stderr and "lease_ms" in done.stderr
    assert not (tmp_path / "run").exists()  # no history folder was made
