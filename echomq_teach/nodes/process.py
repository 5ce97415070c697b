"""One child process the kit starts: launched, awaited, tailed and stopped by its PID.

Every process the kit keeps running goes through ``Child``: a node's
``valkey-server``, the object store's ``weed``, a fault run's worker, the
floor's driver, the container node's reaper, a case model's worker, the
throughput lab's stranded worker; a one-shot tool (the C compiler, a server's
``--version``) goes through ``run_tool``, on the same launcher. ``Child`` launches argv with its env and folder,
sends what it prints to a log file (``tail(n)`` reads its end), waits for it to
be ready by a predicate (bounded; the error names the exit code and the log's
tail), and stops it by its PID: SIGCONT (a frozen process cannot act on
SIGTERM), SIGTERM, a grace period, SIGKILL, and the exit status reaped, so no
zombie and no live PID is left behind.

No child gets a secret on its command line: ``ps`` (``/proc/PID/cmdline``) shows
every argument to every user of the machine, while a process's environment is
readable by its own user only. The kit hands a node's URL or address to its
children in their environment (``ECHOMQ_URL``, ``ECHOMQ_ADDRESS``) and a server
its password in a 0600 config file; ``keep_secret`` names each password and key
this process makes or is given, and ``Child`` and ``run_tool`` refuse an argv
that holds one, before anything is forked.

A child is *tied* to this process by default: it is forked from one launcher
thread that lives as long as the process (Linux binds the death signal to the
*thread* that forked, so a child started from a worker thread would otherwise
die with that thread), with SIGKILL as its death signal. The reaper is the one
child that must outlive the kernel: it is started untied, in a session of its own.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from .. import ending
from ..errors import NodeError

STOP_GRACE_S = 10.0
REAP_WAIT_S = 10.0
PR_SET_PDEATHSIG = 1
#: how many children this process has launched (``launches``): a diagnosis that starts a node is seen by it
_launched = 0


class ChildError(NodeError, RuntimeError):
    """A child process that would not start, or did not become ready in time (its log's tail included)."""


#: the passwords and keys this process made or was given (``keep_secret``), as given and URL-quoted
_secrets: set[str] = set()
#: a shorter secret could match an ordinary argument by chance (every one the kit makes is 24 bytes or more)
SECRET_MIN = 8


def keep_secret(secret: str | None) -> None:
    """From now on, refuse to start a child whose command line holds ``secret`` (a node's password, a store's key)."""
    if secret and len(secret) >= SECRET_MIN:
        _secrets.update({secret, quote(secret, safe="")})


def check_argv(argv: Sequence[str], what: str) -> None:
    """A ``ChildError`` when ``argv`` holds a kept secret; the error names the argument, never the secret."""
    for i, arg in enumerate(argv):
        if any(secret in arg for secret in list(_secrets)):
            raise ChildError(
                f"{what}: argument {i} of its command line holds a password or a key, which ps shows to every "
                "user of the machine; hand it over in the child's environment (ECHOMQ_URL, ECHOMQ_ADDRESS) instead"
            )


def _death_signal(parent: int) -> Callable[[], None]:
    """The child's first act: die by SIGKILL when its parent thread ends (and at once if it already has)."""

    def arm() -> None:
        try:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except OSError:
            return  # not Linux: the finalizers and exit hooks still stop it
        # the parent may have died between fork and prctl: then no signal would ever come
        if os.getppid() != parent:
            os._exit(1)

    return arm


#: run by sh after setpriv armed the death signal: $1 is the parent's pid; a child already orphaned
#: (its parent died before the signal was armed) exits instead of running for nobody
PARENT_GUARD = 'if [ "$PPID" != "$1" ]; then exit 1; fi; shift; exec "$@"'


@functools.cache
def exec_tools() -> tuple[str, str] | None:
    """``setpriv`` (util-linux) and ``sh``, when both are there; else None (the death signal by preexec_fn)."""
    setpriv, sh = shutil.which("setpriv"), shutil.which("sh")
    return (setpriv, sh) if setpriv and sh else None


class Launcher:
    """One daemon thread per process that forks every tied child the kit starts.

    PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not the
    process: a child started from a worker thread (a widget callback, a pool, an
    executor) would die with that thread. This thread ends only with the
    process, so the signal comes exactly when the kernel dies, however it dies.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._jobs: list[tuple[Future[subprocess.Popen[Any]], list[str], dict[str, Any]]] = []
        self._wake = threading.Condition(self._lock)
        # every child still running when the kernel ends is killed and reaped: an unreaped one holds the kernel
        self.children: weakref.WeakSet[subprocess.Popen[Any]] = weakref.WeakSet()
        ending.at_end(self.end_children)

    def end_children(self) -> None:
        """Kill and reap every process this launcher forked that still runs (the kernel is ending)."""
        for proc in list(self.children):
            if proc.poll() is None:
                proc.kill()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass

    def popen(self, args: list[str], **kw: Any) -> subprocess.Popen[Any]:
        if threading.current_thread() is self._thread:
            return self._spawn(args, kw)
        fut: Future[subprocess.Popen[Any]] = Future()
        with self._lock:
            if self._thread is None or self._pid != os.getpid():  # none yet, or we are a fork's child
                self._pid = os.getpid()
                self._jobs = []
                self._thread = threading.Thread(target=self._run, name="echomq-launcher", daemon=True)
                self._thread.start()
            self._jobs.append((fut, args, kw))
            self._wake.notify()
        return fut.result()

    def _spawn(self, args: list[str], kw: dict[str, Any]) -> subprocess.Popen[Any]:
        proc = self._fork(args, kw)
        self.children.add(proc)
        return proc

    def _fork(self, args: list[str], kw: dict[str, Any]) -> subprocess.Popen[Any]:
        tools = exec_tools()
        if tools is None:
            return subprocess.Popen(args, preexec_fn=_death_signal(os.getpid()), **kw)
        # the same death signal without a Python function in the child, so that the child is
        # vforked (well under a millisecond) instead of forked from a kernel's whole address space
        # (tens of ms): setpriv arms it, then sh leaves at once if the parent is already gone
        setpriv, sh = tools
        guard = [sh, "-c", PARENT_GUARD, "echomq-launch", str(os.getpid())]
        return subprocess.Popen([setpriv, "--pdeathsig", "KILL", "--", *guard, *args], **kw)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._jobs:
                    self._wake.wait()
                fut, args, kw = self._jobs.pop(0)
            try:
                fut.set_result(self._spawn(args, kw))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                fut.set_exception(exc)


launcher = Launcher()


def launches() -> int:
    """How many children this process has launched so far (a count that only grows)."""
    return _launched


def _count_launch() -> None:
    global _launched
    _launched += 1


def run_tool(argv: Sequence[str], timeout_s: float = 300.0,
             env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a one-shot tool (the C compiler, ``valkey-server --version``, a check's runner) to its end and answer
    what it printed; ``env`` replaces the environment it runs in.

    The same launcher as every long-lived child, so a tool still running when the kernel dies dies with
    it; bounded by ``timeout_s`` (then killed, reaped, and a ``ChildError`` names the tool). A tool that
    is not there, or cannot run, raises ``FileNotFoundError``/``PermissionError`` before anything is forked
    (the launcher's wrapper would otherwise turn it into an exit code).
    """
    argv = [str(a) for a in argv]
    check_argv(argv, Path(argv[0]).name)
    found = shutil.which(argv[0])
    if found is None:
        raise FileNotFoundError(f"{argv[0]!r} is not an executable file")
    proc = launcher.popen([found, *argv[1:]], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=None if env is None else dict(env))
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise ChildError(f"{' '.join(argv[:2])} did not finish within {timeout_s:g} s") from None
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def pid_alive(pid: int) -> bool:
    """Whether a process with this PID exists (any owner's: a PID we may not signal is still alive)."""
    try:
        os.kill(pid, 0)  # signal 0 delivers nothing: it only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_tail(paths: Sequence[Path], lines: int) -> str:
    """The last ``lines`` lines of the files in ``paths`` read one after the other; a note when none was written."""
    out: list[str] = []
    for path in paths:
        try:
            out += path.read_text(errors="replace").splitlines()
        except OSError:
            pass
    return "\n".join(out[-lines:]) if out else "(no log written)"


class Child:
    """One child process, known by its PID, its output in ``log``.

    ``argv`` is run with ``env`` (default: this process's) in ``cwd``. What it
    prints goes to ``log`` (appended), or nowhere when ``log`` is None;
    ``also_logs`` are files the program writes itself (a server's own log
    file), read before ``log`` by ``tail``. ``stdout_pipe`` keeps stdout as a
    pipe for the caller to read line by line (``text`` decides str or bytes)
    and sends only stderr to ``log``; ``stdin_pipe`` gives a pipe to write to.
    ``tied`` (the default) makes it die with this process; an untied child
    runs in a session of its own. ``what`` names it in errors.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        log: str | os.PathLike[str] | None,
        env: dict[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        also_logs: Sequence[str | os.PathLike[str]] = (),
        stdout_pipe: bool = False,
        stdin_pipe: bool = False,
        text: bool = False,
        tied: bool = True,
        what: str | None = None,
    ) -> None:
        self.argv = [str(a) for a in argv]
        if not self.argv:
            raise ValueError("a child process needs a command: argv is empty")
        self.what = what or Path(self.argv[0]).name
        check_argv(self.argv, self.what)
        # checked here: behind setpriv and sh, a missing program would only be an exit code 127
        if shutil.which(self.argv[0], path=(env or os.environ).get("PATH")) is None:
            raise ChildError(f"could not run {self.argv[0]!r}: no executable file by that name")
        self.log = Path(log) if log is not None else None
        self.also_logs = [Path(p) for p in also_logs]
        kw: dict[str, Any] = {
            "stdin": subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            "env": env,
            "cwd": None if cwd is None else str(cwd),
            "text": text,
        }
        out: IO[bytes] | None = open(self.log, "ab") if self.log is not None else None  # noqa: SIM115 - closed below
        try:
            if stdout_pipe:
                kw.update(stdout=subprocess.PIPE, stderr=out)
            elif out is not None:
                kw.update(stdout=out, stderr=subprocess.STDOUT)
            else:
                kw.update(stdout=subprocess.DEVNULL)  # stderr stays this process's: a last word is seen
            try:
                if tied:
                    self.proc: subprocess.Popen[Any] = launcher.popen(self.argv, **kw)
                else:
                    self.proc = subprocess.Popen(self.argv, start_new_session=True, **kw)
            except OSError as exc:
                raise ChildError(f"could not run {self.argv[0]!r}: {exc}") from exc
            _count_launch()
        finally:
            if out is not None:
                out.close()  # the child holds its own copy of the descriptor
        self.frozen = False

    # -- what it is ------------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        """True until the process has ended (a frozen process is alive)."""
        return self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        """Its exit status once ended (negative: the signal that ended it); None while it runs."""
        return self.proc.poll()

    def tail(self, lines: int = 15) -> str:
        """The last lines of what it wrote (its own log files first, then what it printed)."""
        paths = [*self.also_logs, *([self.log] if self.log is not None else [])]
        return read_tail(paths, lines) if paths else "(no log kept)"

    # -- waiting ---------------------------------------------------------------------------------
    def wait_ready(self, ready: Callable[[], bool], timeout: float, *, poll_s: float = 0.02) -> None:
        """Until ``ready()`` answers true; a ``ChildError`` with the log's tail if it exits or time runs out.

        ``ready`` is asked at once, then after 1 ms, doubling up to ``poll_s``
        (most children are up in milliseconds). On a timeout the child is
        stopped by its PID before the error is raised: nothing is left running.
        """
        deadline = time.monotonic() + timeout
        pause = min(0.001, poll_s)
        while True:
            if ready():
                return
            code = self.proc.poll()
            if code is not None:
                raise ChildError(f"{self.what} exited with code {code} while starting; the end of its log:\n"
                                 f"{self.tail()}")
            if time.monotonic() >= deadline:
                break
            time.sleep(pause)
            pause = min(pause * 2, poll_s)
        self.stop()
        raise ChildError(f"{self.what} was not ready within {timeout:g} s; the end of its log:\n{self.tail()}")

    def wait(self, timeout: float | None = REAP_WAIT_S) -> int:
        """Until it ends on its own (bounded by ``timeout``); its exit status. ``TimeoutExpired`` past it."""
        return self.proc.wait(timeout=timeout)

    # -- signals ---------------------------------------------------------------------------------
    def signal(self, sig: int) -> None:
        """Send ``sig`` to its PID, if it still runs."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def freeze(self) -> None:
        """SIGSTOP: it stops between two instructions, holding whatever it holds."""
        if self.alive:
            self.proc.send_signal(signal.SIGSTOP)
            self.frozen = True

    def thaw(self) -> None:
        """SIGCONT: it carries on from where it stopped, unaware of the time that passed."""
        if self.alive:
            self.proc.send_signal(signal.SIGCONT)
        self.frozen = False

    def kill(self) -> None:
        """SIGKILL by PID, as a crash would: no exit hook runs; then its exit status is reaped."""
        self.signal(signal.SIGKILL)
        self.frozen = False
        self.proc.wait(timeout=REAP_WAIT_S)

    def stop(self, grace: float = STOP_GRACE_S) -> int:
        """SIGCONT (should it be frozen), SIGTERM, up to ``grace`` seconds, then SIGKILL; reaped. Its exit status."""
        if self.proc.poll() is None:
            self.thaw()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc.stdin is not None:  # a pipe we gave it is ours to close
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        return self.proc.wait(timeout=REAP_WAIT_S)

    def __repr__(self) -> str:
        code = self.proc.poll()
        state = "frozen" if self.frozen and code is None else ("running" if code is None else f"ended ({code})")
        return f"<{type(self).__name__} {self.what} pid {self.pid} {state}>"
