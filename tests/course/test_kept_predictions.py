"""A kept prediction holds against what a learner can do from their kernel (issue 31, "first answer kept").

Each test is one attack from the lazy learners' reports (kept in the issue): commit any answer,
read the run it shows, then undo the commitment and answer again. What the kit does about each: the record
deleted, edited or written by hand, the folder switched in ``os.environ``, the seal deleted, a teacher's
``forget``: noticed, said first in the verdict (the line the live view shows an instructor), and the first
answer graded where one was kept. Plus the strict forms the reports found lax (03.4's "three", 05.4's "x",
07.1's "?"). 03.4 is the prediction used: its run takes a tenth of a second.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from echomq_teach.course import exercises, predictions

WRONG = {"where after each round": ["pending"] * 5, "stalled count at the end": 3}
RIGHT = {"where after each round": ["pending", "pending", "pending", "pending", "dead"], "stalled count at the end": 3}


def _commit_wrong_then_read_the_run(conn) -> str:
    first = exercises.check("03.4", WRONG, conn)
    assert not first.ok and "the run gave ['pending', 'pending', 'pending', 'pending', 'dead']" in str(first)
    return str(first)


def test_a_deleted_record_is_graded_on_the_first_answer_and_said(conn, predictions_folder):
    _commit_wrong_then_read_the_run(conn)
    (predictions_folder / "03.4.json").unlink()
    again = exercises.check("03.4", RIGHT, conn)
    assert not again.ok
    assert again.findings[0].startswith("the prediction kept for 03.4 at ")
    assert "removed or changed by hand" in again.findings[0]
    assert "graded: your first prediction" in str(again)
    assert "log" not in again.findings[0] and "copy" not in again.findings[0]  # says what happened, not where
    assert not (predictions_folder / "03.4.json").exists()  # nothing new kept in its place


def _undo(folder, how: str) -> None:
    """Attack C's A1 and D's X2: the record deleted, and the seal (or its log) removed or cut short."""
    (folder / "03.4.json").unlink()
    seal = folder.with_name("predictions.seal")
    if how == "truncate":
        (seal / "log").write_text("")
    elif how == "rmseal":
        shutil.rmtree(seal)
    else:
        (seal / "log").unlink()


@pytest.mark.parametrize("how", ["truncate", "rmseal", "rmlogonly"])
def test_a_kept_prediction_undone_with_its_seal_is_still_graded(how, conn, predictions_folder, monkeypatch):
    _commit_wrong_then_read_the_run(conn)
    _undo(predictions_folder, how)
    again = exercises.check("03.4", RIGHT, conn)
    assert not again.ok and "graded: your first prediction" in str(again)
    assert "removed or changed by hand" in again.findings[0] and str(predictions_folder) not in again.findings[0]
    assert predictions.committed("03.4").answer == WRONG
    # a fresh kernel (nothing remembered in the process): the witness outside the folder still grades it
    monkeypatch.setattr(predictions, "_SESSION", {})
    assert predictions.committed("03.4").answer == WRONG
    # the witness removed too, in the same kernel: what the kernel kept still grades it
    shutil.rmtree(predictions_folder.with_name("predictions.install"))
    monkeypatch.setattr(predictions, "_SESSION", {(predictions_folder, "03.4"): {"answer": WRONG, "at": "then"}})
    assert not exercises.check("03.4", RIGHT, conn).ok


def test_a_probe_started_from_a_kernel_keeps_the_kernels_folder(tmp_path):
    """Attack D's X1: a child of the kernel, given a fresh ``$ECHOMQ_PREDICTIONS``, tries a prediction there,
    reads the run, and the kernel answers right first time. The child keeps the kernel's place: its try is
    the first, and the kernel's answer is graded on it. (A kernel here is a process run as ``ipykernel_launcher``,
    the argument Jupyter starts every kernel with.)"""
    child = ("from echomq_teach.course import predictions as p; "
             f"print(p.folder()); print(p.commit('03.4', {WRONG!r}).answer == {WRONG!r})")
    kernel = ("import os, subprocess, sys\n"
              "from echomq_teach.course import predictions as p\n"
              "env = dict(os.environ, ECHOMQ_PREDICTIONS=os.environ['FRESH'])\n"
              f"print(subprocess.run([sys.executable, '-c', {child!r}], env=env, capture_output=True, text=True,"
              " timeout=60, check=True).stdout, end='')\n"
              f"print(p.commit('03.4', {RIGHT!r}).answer == {WRONG!r})\n")
    env = {**os.environ, predictions.PREDICTIONS_ENV: str(tmp_path / "kernel"), "FRESH": str(tmp_path / "fresh"),
           "JUPYTER_DATA_DIR": str(tmp_path / "data")}
    out = subprocess.run([sys.executable, "-c", kernel, "ipykernel_launcher"], capture_output=True, text=True,
                         timeout=120, check=True, env=env)
    assert out.stdout.split() == [str(tmp_path / "kernel"), "True", "True"], out.stdout + out.stderr
    assert not (tmp_path / "fresh").exists() and (tmp_path / "data" / "echomq-teach" / "install").is_dir()


def test_an_edited_record_is_graded_on_the_answer_kept_and_said(conn, predictions_folder):
    _commit_wrong_then_read_the_run(conn)
    path = predictions_folder / "03.4.json"
    record = json.loads(path.read_text())
    record["answer"] = RIGHT  # what the run gave, copied into the file
    path.write_text(json.dumps(record))
    again = exercises.check("03.4", RIGHT, conn)
    assert not again.ok
    assert "was changed after it was kept" in again.findings[0] and "graded on the answer kept at" in again.findings[0]
    assert predictions.committed("03.4").answer == WRONG


def test_a_record_written_by_hand_is_not_graded_and_nothing_is_kept(conn, predictions_folder):
    predictions_folder.mkdir(parents=True)
    forged = predictions_folder / "03.4.json"
    forged.write_text(json.dumps({"key": "03.4", "answer": RIGHT, "at": "2020-01-01T00:00:00Z", "n": 1, "mac": "0"}))
    verdict = exercises.check("03.4", RIGHT, conn)
    assert not verdict.ok and "the run gave" not in str(verdict)
    assert "holds a prediction the kit did not keep" in verdict.findings[0] and "Delete that file" in str(verdict)
    assert exercises.hint("03.4") == exercises.NO_HINT_BEFORE_PREDICTING
    assert json.loads(forged.read_text())["mac"] == "0"  # left as it was: nothing kept over it
    forged.unlink()  # as the verdict says: then the learner's own first prediction is kept
    assert exercises.check("03.4", RIGHT, conn).ok


def test_a_deleted_seal_key_still_grades_the_first_answer(conn, predictions_folder):
    _commit_wrong_then_read_the_run(conn)
    (predictions_folder.with_name("predictions.seal") / "key").unlink()
    verdict = exercises.check("03.4", RIGHT, conn)
    assert not verdict.ok and "removed or changed by hand" in str(verdict)
    assert "graded: your first prediction" in str(verdict)


def test_a_forgotten_prediction_is_said_on_the_next_verdict(conn):
    _commit_wrong_then_read_the_run(conn)
    assert predictions.forget("03.4")
    again = exercises.check("03.4", RIGHT, conn)
    assert again.ok  # a teacher reset the seat: the second prediction is graded, and the verdict says so
    assert again.findings[0].startswith("a prediction was kept for 03.4 at ") and "forgotten since" in str(again)


def test_a_changed_log_is_said(conn, predictions_folder):
    _commit_wrong_then_read_the_run(conn)
    log = predictions_folder.with_name("predictions.seal") / "log"
    line = json.loads(log.read_text())
    line["answer"] = RIGHT
    log.write_text(json.dumps(line) + "\n")
    verdict = exercises.check("03.4", RIGHT, conn)
    assert any("was changed by hand from its line 1" in f for f in verdict.findings)


def test_a_folder_named_in_os_environ_later_is_not_used_and_said(conn, predictions_folder, tmp_path, monkeypatch):
    _commit_wrong_then_read_the_run(conn)
    monkeypatch.setenv(predictions.PREDICTIONS_ENV, str(tmp_path / "fresh"))
    again = exercises.check("03.4", RIGHT, conn)
    assert not again.ok and "graded: your first prediction" in str(again)
    assert f"${predictions.PREDICTIONS_ENV} was changed to {tmp_path / 'fresh'}" in str(again)
    assert not (tmp_path / "fresh").exists()


def test_a_process_keeps_the_folder_it_started_with(tmp_path):
    # what a kernel does: its environment as it started names the folder, whatever os.environ says later
    code = ("import os; os.environ['ECHOMQ_PREDICTIONS'] = os.environ['LATER']\n"
            "from echomq_teach.course import predictions as p\n"
            "print(p.folder()); print(p.env_changed() is not None)")
    env = {**os.environ, predictions.PREDICTIONS_ENV: str(tmp_path / "first"), "LATER": str(tmp_path / "later")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True, env=env)
    assert out.stdout.split() == [str(tmp_path / "first"), "True"]


def test_a_kernel_cannot_choose_another_folder(monkeypatch, tmp_path):
    import IPython

    class Kernel:
        kernel = object()

    monkeypatch.setitem(sys.modules, "ipykernel", sys.modules.get("ipykernel") or object())
    monkeypatch.setattr(IPython, "get_ipython", lambda: Kernel())
    before = predictions.folder()
    with pytest.raises(predictions.BadInput, match="chosen when the kernel starts"):
        predictions.use(tmp_path / "fresh")
    assert predictions.folder() == before


@pytest.mark.parametrize(("key", "answer", "says"), [
    ("03.4", {"where after each round": ["pending"] * 5, "stalled count at the end": "three"},
     "'stalled count at the end' is a whole number (0, 1, …); got 'three'."),
    ("05.4", {"dependencies after each step": [3, 3, 3, 2, 1, 0], "the parent's state at the end": "x",
              "entries in the parent's :unsuccessful at the end": 1},
     "'the parent\\'s state at the end' is one of"),
    ("07.1", {pair: {"handler runs": "?", "charges": 1, "settled with token": 2}
              for pair in ("claimed, then claimed", "handler, then handled", "handled, then settle-sent",
                           "claimed, then handler")},
     "['handler runs'] is a whole number (0, 1, …); got '?'."),
])
def test_an_answer_of_the_wrong_form_is_refused_naming_the_form(key, answer, says, conn, predictions_folder):
    verdict = exercises.check(key, answer, conn)
    text = str(verdict)
    assert not verdict.ok and says.replace("\\'", "'") in text.replace('"', "'"), text
    assert "nothing was kept" in text and "the run gave" not in text and 'exercises.hint("' not in text
    assert predictions.committed(key) is None and not predictions_folder.exists()
    assert exercises.hint(key) == exercises.NO_HINT_BEFORE_PREDICTING
