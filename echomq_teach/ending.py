"""What a kernel made ends with the kernel; a stopped node says so in one line.

**At the end.** Every node and fault run the kit starts is tracked here (weakly:
tracking keeps nothing alive). When the kernel ends, each one still open is
stopped or closed, newest first, so its processes are reaped and its folder in
the temporary directory is removed; a run's folder the learner named
(``Run(..., folder=...)``) is kept. "Ends" covers Jupyter's shutdown request
(the hook wraps the kernel's ``do_shutdown``: Jupyter gives a kernel a few
seconds before SIGTERM, and a child the kernel has not reaped holds it past
them, so waiting for ``atexit`` comes too late), SIGTERM, and a plain
interpreter exit (``atexit``). A SIGKILLed kernel runs nothing: its servers
die by their death signal and the next node's start sweeps the folders.

**A stopped node.** A cell run again after ``node.stop()`` meets a refused
connection: in IPython the sixteen-frame ``ConnectionError`` is replaced by one
line that says which node was stopped and the call that brings one back.
Any other error shows its traceback as usual.

**A one line that lets the run go on.** A room may register a kind of error
whose one line is the cell's whole answer (``one_line(..., goes_on=True)``: a
native node on a machine that cannot have one). Such a cell still shows its
red line, but its reply to Jupyter is "ok", so Run All (which stops at the
first cell whose reply is an error) goes on to the next cell.

The core imports nothing of the rooms: the nodes and the lab register here.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any

_lock = threading.Lock()
#: (weak reference, method name) of everything to end, oldest first
_tracked: list[tuple[weakref.ref[Any], str]] = []
#: plain callables run after the tracked objects (the launcher's leftover children)
_finally: list[Callable[[], None]] = []
_ended_pid = 0
_installed_pid = 0
#: "127.0.0.1:port" or a socket path of a node stopped in this process → the call that brings one back
_stopped: dict[str, str] = {}


def track(obj: Any, method: str = "close") -> None:
    """End ``obj`` (call ``obj.<method>()``) when the kernel ends, unless it is gone by then."""
    install()
    with _lock:
        # drop the dead references as we go, so a long session's list stays short
        _tracked[:] = [(r, m) for r, m in _tracked if r() is not None]
        _tracked.append((weakref.ref(obj), method))


def alive() -> list[Any]:
    """Everything tracked and not yet gone, oldest first (the nodes this kernel runs among them)."""
    with _lock:
        return [obj for obj in (r() for r, _ in _tracked) if obj is not None]


def at_end(fn: Callable[[], None]) -> None:
    """Run ``fn`` at the kernel's end, after every tracked object has ended."""
    install()
    with _lock:
        _finally.append(fn)


def end_all() -> list[str]:
    """End everything tracked, newest first, once per process; answers a line per failure (never raises)."""
    global _ended_pid
    with _lock:
        if _ended_pid == os.getpid():
            return []
        _ended_pid = os.getpid()
        todo = [(r(), m) for r, m in reversed(_tracked)]
        _tracked.clear()
        last = list(_finally)
    failures: list[str] = []
    for obj, method in todo:
        if obj is None:
            continue
        try:
            getattr(obj, method)()
        except Exception as exc:  # noqa: BLE001 - the others must still end
            failures.append(f"{obj!r}.{method}(): {exc}")
    for fn in last:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001
            failures.append(f"{fn!r}: {exc}")
    return failures


# -- stopped nodes --------------------------------------------------------------------------------------------
def node_stopped(where: str, again: str) -> None:
    """Remember that the node at ``where`` was stopped here; ``again`` is the call that starts one."""
    _stopped[where] = again


def node_started(where: str) -> None:
    """A node now answers at ``where`` (a port can be reused): forget that one there was stopped."""
    _stopped.pop(where, None)


def stopped_hint(exc: BaseException) -> str | None:
    """The one-line message for an error that came from talking to a node stopped in this kernel, else None."""
    text = str(exc)
    for where, again in list(_stopped.items()):
        if where and where in text:
            return (
                f"the node at {where} was stopped (its stop() ran in an earlier cell), so nothing answers there. "
                f"Bring one back with `{again}`, then run the cells that use it again "
                "(or Kernel > Restart Kernel and Run All Cells)."
            )
    return None


#: the rooms' own one-line errors (``one_line``): (types, the line for such an error or None, its label, goes on)
_one_liners: list[tuple[tuple[type[BaseException], ...], Callable[[BaseException], str | None], str, bool]] = []
#: the exception types this process last gave IPython (so it can widen them; a learner's own stay)
_hooked: tuple[type[BaseException], ...] = ()
#: the error of the running cell that was shown as a line that lets the run go on (``_after_cell`` clears it)
_went_on: list[BaseException] = []


def one_line(types: tuple[type[BaseException], ...], describe: Callable[[BaseException], str | None],
             label: str, goes_on: bool = False) -> None:
    """In IPython, show an error of ``types`` that ``describe`` has a line for as that one red line.

    ``label: <line>`` replaces the frames; an error ``describe`` answers None for keeps its
    traceback. With ``goes_on``, a cell that ends in such a line answers Jupyter "ok", so Run All
    goes on past it. The rooms register theirs here (the core imports none of them).
    """
    with _lock:
        if (types, describe, label, goes_on) not in _one_liners:
            _one_liners.append((types, describe, label, goes_on))
    install()
    shell = _ipython()
    if shell is not None:
        _hook_errors(shell)


def _on_error(
    shell: Any, etype: type[BaseException], value: BaseException, tb: TracebackType | None, tb_offset: Any = None
) -> None:
    import redis

    found = [(stopped_hint(value), "NodeStopped", False)] if isinstance(value, redis.exceptions.ConnectionError) else []
    found += [(describe(value), label, goes_on)
              for types, describe, label, goes_on in list(_one_liners) if isinstance(value, types)]
    for line, label, goes_on in found:
        if line:
            # ipykernel sends this as the cell's error: one red line instead of the frames
            shell._showtraceback(etype, value, [f"\x1b[0;31m{label}\x1b[0m: {line}"])
            if goes_on:
                _went_on[:] = [value]
            return
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)


def _after_cell(result: Any) -> None:
    """IPython's ``post_run_cell``: a cell whose error was a line that goes on answers Jupyter "ok".

    ipykernel reads ``result.success`` after this event to choose the reply's status, and aborts the
    cells queued behind an "error" reply (Run All's ``stop_on_error``); the red line stays the cell's output.
    """
    went_on, _went_on[:] = list(_went_on), []
    if result is not None and went_on and result.error_in_exec is went_on[0]:
        result.error_in_exec = None


def cell_names(source: str) -> set[str]:
    """The names a cell's top-level statements bind (assignments, imports, defs, for and with targets)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in tree.body:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                names.add(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(sub.name)
            elif isinstance(sub, ast.alias):
                names.add((sub.asname or sub.name).split(".")[0])
    return names


def running_cell() -> str:
    """The source of the cell IPython is running now ("" outside IPython)."""
    shell = _ipython()
    inputs = getattr(shell, "user_ns", {}).get("_ih") or [""]
    return str(inputs[-1])


# -- installing the hooks --------------------------------------------------------------------------------------
def install() -> None:
    """Hook the kernel's end (and, in IPython, the stopped-node message) once per process."""
    global _installed_pid
    with _lock:
        if _installed_pid == os.getpid():
            return
        _installed_pid = os.getpid()
    atexit.register(end_all)
    shell = _ipython()
    if shell is None:
        return  # a script or a worker process: atexit and the finalizers are enough
    _hook_sigterm()
    _hook_errors(shell)
    kernel = getattr(shell, "kernel", None)
    if kernel is not None and not getattr(kernel, "_echomq_ending", False):
        original = kernel.do_shutdown

        def do_shutdown(restart: bool) -> Any:
            end_all()
            return original(restart)

        kernel.do_shutdown = do_shutdown
        kernel._echomq_ending = True


def _ipython() -> Any:
    # only when IPython is already loaded: a plain script never imports it for us
    mod = sys.modules.get("IPython")
    get = getattr(mod, "get_ipython", None)
    return get() if get else None


def _hook_errors(shell: Any) -> None:
    global _hooked
    import redis

    # a learner's own handler stays: ours goes in only where none is set, or where ours is
    if getattr(shell, "custom_exceptions", ()) not in ((), None, _hooked):
        return
    types = (redis.exceptions.ConnectionError, *(t for types, _, _, _ in _one_liners for t in types))
    _hooked = tuple(dict.fromkeys(types))
    shell.set_custom_exc(_hooked, _on_error)
    if _after_cell not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", _after_cell)


def _hook_sigterm() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return  # someone else handles it: leave it to them (atexit still runs on their exit)

    def on_term(signum: int, frame: Any) -> None:
        end_all()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_term)
