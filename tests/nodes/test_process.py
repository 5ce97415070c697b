"""The kit's one child process (``echomq_teach.nodes.process.Child``), on real child processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import wait_for

from echomq_teach.errors import NodeError
from echomq_teach.nodes import process
from echomq_teach.nodes.process import Child, ChildError

PY = sys.executable


def pid_gone(pid: int) -> bool:
    """True when no process (not even a zombie) holds ``pid`` any more."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def proc_state(pid: int) -> str:
    """The kernel's one-letter state of ``pid`` (``T``: stopped by a signal)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def python(code: str, log: Path, **kw) -> Child:
    return Child([PY, "-u", "-c", code], log=log, **kw)


def test_ready_wait_returns_once_the_predicate_holds_and_the_log_holds_what_it_printed(tmp_path):
    flag = tmp_path / "up"
    code = (f"import time, pathlib; print('starting'); time.sleep(0.2); "
            f"pathlib.Path({str(flag)!r}).touch(); time.sleep(30)")
    child = python(code, tmp_path / "c.log")
    try:
        t0 = time.monotonic()
        child.wait_ready(flag.exists, timeout=10)
        assert flag.exists() and child.alive
        assert time.monotonic() - t0 >= 0.15  # it waited for the flag, not only for the launch
        assert child.tail() == "starting"
    finally:
        code = child.stop()
    assert code == -signal.SIGTERM and not child.alive and pid_gone(child.pid)


def test_a_timeout_names_the_log_tail_and_leaves_no_process(tmp_path):
    code = "import time\nfor i in range(40): print('line', i)\ntime.sleep(60)"
    child = python(code, tmp_path / "c.log", what="the sleeper")
    # its forty lines are written first (a loaded machine may take longer than the bound below to start it)
    wait_for(lambda: "line 39" in (tmp_path / "c.log").read_text(), "the sleeper's forty lines", timeout=30)
    with pytest.raises(ChildError) as err:
        child.wait_ready(lambda: False, timeout=0.5)
    text = str(err.value)
    assert "the sleeper was not ready within 0.5 s" in text
    assert "line 39" in text and "line 10" not in text  # the tail, not the whole log
    assert isinstance(err.value, NodeError)
    assert not child.alive and pid_gone(child.pid)


def test_a_child_that_exits_while_starting_is_reported_with_its_code_and_last_words(tmp_path):
    child = python("import sys; print('bad config line 3'); sys.exit(7)", tmp_path / "c.log")
    with pytest.raises(ChildError, match=r"exited with code 7 while starting(.|\n)*bad config line 3"):
        child.wait_ready(lambda: False, timeout=10)
    assert pid_gone(child.pid)


def test_stop_escalates_to_sigkill_for_a_process_that_ignores_sigterm(tmp_path):
    flag = tmp_path / "armed"
    code = (
        "import signal, time, pathlib\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"pathlib.Path({str(flag)!r}).touch()\n"
        "time.sleep(60)"
    )
    child = python(code, tmp_path / "c.log")
    child.wait_ready(flag.exists, timeout=10)  # SIGTERM is ignored from here on
    t0 = time.monotonic()
    code_ = child.stop(grace=0.5)
    took = time.monotonic() - t0
    assert code_ == -signal.SIGKILL
    assert took >= 0.5  # the grace was given before the SIGKILL
    assert pid_gone(child.pid)


def test_a_frozen_child_is_stopped_by_sigterm_after_sigcont(tmp_path):
    child = python("import time; time.sleep(60)", tmp_path / "c.log")
    child.freeze()
    assert child.frozen and child.alive
    deadline = time.monotonic() + 5
    while proc_state(child.pid) != "T" and time.monotonic() < deadline:
        time.sleep(0.01)  # a signal is delivered asynchronously
    assert proc_state(child.pid) == "T"  # stopped by SIGSTOP
    code = child.stop(grace=5)
    # SIGTERM ended it (not the SIGKILL): the SIGCONT let it act on the signal
    assert code == -signal.SIGTERM
    assert not child.frozen and pid_gone(child.pid)


def test_kill_is_sigkill_and_reaps(tmp_path):
    child = python("import time; time.sleep(60)", tmp_path / "c.log")
    child.kill()
    assert child.returncode == -signal.SIGKILL and pid_gone(child.pid)
    child.kill()  # a second kill of an ended child is harmless
    assert child.stop() == -signal.SIGKILL


def test_pid_alive_follows_a_child_to_its_end_and_counts_a_process_we_may_not_signal(tmp_path):
    child = python("import time; time.sleep(60)", tmp_path / "c.log")
    assert process.pid_alive(child.pid)
    child.freeze()
    assert process.pid_alive(child.pid)  # a frozen process is alive
    child.stop(grace=5)
    assert not process.pid_alive(child.pid)  # stopped and reaped: no process holds the PID
    # PID 1 is root's: signal 0 to it is refused for a user, and it still counts as alive
    assert process.pid_alive(1)


def test_argv_env_and_cwd_reach_the_child(tmp_path):
    code = "import os, sys; print(sys.argv[1], os.environ['ECHOMQ_PROBE'], os.getcwd())"
    env = dict(os.environ, ECHOMQ_PROBE="probe-42")
    child = Child([PY, "-c", code, "first-arg"], log=tmp_path / "c.log", env=env, cwd=tmp_path)
    assert child.wait(timeout=20) == 0
    assert child.tail() == f"first-arg probe-42 {tmp_path}"


def test_a_missing_program_is_one_clear_error(tmp_path):
    with pytest.raises(ChildError, match="could not run"):
        Child([str(tmp_path / "no-such-program")], log=tmp_path / "c.log")


def test_a_tied_child_dies_with_the_process_that_started_it(tmp_path):
    # a middle process starts a tied grandchild, prints its pid, then is SIGKILLed
    code = (
        "import sys, time\n"
        "from echomq_teach.nodes.process import Child\n"
        f"c = Child([{PY!r}, '-c', 'import time; time.sleep(60)'], log={str(tmp_path / 'g.log')!r})\n"
        "print(c.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    middle = python(code, tmp_path / "m.log")
    middle.wait_ready(lambda: middle.tail().strip().isdigit(), timeout=20)
    grandchild = int(middle.tail().strip())
    middle.kill()
    deadline = time.monotonic() + 10
    while not pid_gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)  # init reaps the orphan once it is killed
    assert pid_gone(grandchild)


def test_an_orphaned_launch_runs_nothing(tmp_path) -> None:
    # setpriv arms the death signal, then the guard runs the server only if its parent is still the
    # one that launched it: a child orphaned before the signal was armed would run for nobody
    tools = process.exec_tools()
    if tools is None:
        pytest.skip("no setpriv: the death signal is armed by preexec_fn instead")
    setpriv, sh = tools
    mark = tmp_path / "ran"
    run = ["/bin/sh", "-c", f"echo yes > {mark}"]
    for parent, code, ran in ((1, 1, False), (os.getpid(), 0, True)):  # an orphan is reparented (pid 1)
        args = [setpriv, "--pdeathsig", "KILL", "--", sh, "-c", process.PARENT_GUARD, "echomq-launch", str(parent)]
        assert subprocess.run(args + run).returncode == code
        assert mark.exists() is ran


# -- one-shot tools (the compiler, a server's --version) --------------------------------------------------------
def test_run_tool_answers_the_exit_code_and_what_the_tool_printed():
    done = process.run_tool([PY, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")


def test_run_tool_kills_and_reaps_a_tool_past_its_bound(tmp_path):
    pidfile = tmp_path / "pid"
    script = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(30)"
    t0 = time.monotonic()
    with pytest.raises(ChildError, match="did not finish within 0.5 s"):
        process.run_tool([PY, "-c", script], timeout_s=0.5)
    assert time.monotonic() - t0 < 20  # it did not wait for the tool's own 30 s
    # the launcher's wrapper execs the tool itself: the PID it wrote is the one killed and reaped
    assert pid_gone(int(pidfile.read_text()))


def test_run_tool_refuses_a_missing_tool_before_forking(tmp_path):
    with pytest.raises(FileNotFoundError, match="nonexistent-tool"):
        process.run_tool([str(tmp_path / "nonexistent-tool"), "--version"])


def test_run_tool_runs_a_tool_in_the_environment_it_is_given():
    env = dict(os.environ, ECHOMQ_TOOL_WORD="given")
    done = process.run_tool([PY, "-c", "import os; print(os.environ['ECHOMQ_TOOL_WORD'])"], env=env)
    assert (done.returncode, done.stdout) == (0, "given\n")


# -- the one way: no kit module starts a process but through this one ---------------------------------------------
STARTERS = {("subprocess", n) for n in ("run", "Popen", "call", "check_call", "check_output", "getoutput",
                                         "getstatusoutput")}
STARTERS |= {("os", n) for n in ("system", "popen", "fork", "forkpty", "execv", "execve", "execvp", "execvpe",
                                 "spawnv", "spawnve", "spawnvp", "posix_spawn", "posix_spawnp")}


#: a case model's prefork pool forks its task child itself, inside a model worker that is a tied Child: the
#: model is of celery's pool, and the task lives milliseconds
FORKS_OF_THEIR_OWN = {"echomq_teach/lab/models/celery_acks_late.py os.fork"}


def test_no_kit_module_starts_a_process_but_nodes_process():
    import ast

    root = Path(__file__).resolve().parents[2]
    found = []
    for folder in (root / "echomq_teach", root / "widgets"):
        for path in sorted(folder.rglob("*.py")):
            if path == root / "echomq_teach" / "nodes" / "process.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                f = node.func if isinstance(node, ast.Call) else None
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (f.value.id, f.attr) in STARTERS:
                    found.append(f"{path.relative_to(root)} {f.value.id}.{f.attr}")
    assert sorted(set(found) - FORKS_OF_THEIR_OWN) == []
    assert FORKS_OF_THEIR_OWN <= set(found), "an allowance is no longer needed: remove it"
