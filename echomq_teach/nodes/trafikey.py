"""The ``trafikey`` native module: prebuilt in the wheel, or built from ``native/`` with the system C compiler.

A wheel built on Linux x86-64 carries the module compiled from its own sources
(``setup.py``, ``trafikey_recipe``); everywhere else (a checkout, a pure wheel on
another machine) the kit compiles it at first use and caches the ``.so`` under a
name that carries the hash of the sources, so a change to the C rebuilds it and
an unchanged tree reuses it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .. import ending, shipped
from ..errors import NodeError
from .process import run_tool
from .trafikey_recipe import CFLAGS, MODULE_NAME, command, file_name, sources

__all__ = ["CFLAGS", "MODULE_NAME", "NativeBuildError", "build", "cache_dir", "compiler", "prebuilt", "source_dir"]


class NativeBuildError(NodeError):
    """The module could not be compiled (no compiler, or the C failed)."""


def source_dir() -> Path:
    """``native/`` of the checkout, or the copy inside the wheel (or ``$ECHOMQ_NATIVE_DIR``)."""
    env = os.environ.get("ECHOMQ_NATIVE_DIR")
    return Path(env) if env else shipped.path("native")


def cache_dir() -> Path:
    env = os.environ.get("ECHOMQ_CACHE_DIR")
    root = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "echomq-teach"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _sources(src: Path) -> list[Path]:
    files = sources(src)
    if not any(f.suffix == ".c" for f in files):
        raise NativeBuildError(f"no C sources for the {MODULE_NAME} module in {src}")
    return files


_INSTALL_CC = "install one (Debian: apt-get install gcc libc6-dev) or set CC"


def compiler() -> str:
    """The system C compiler, or a clear error naming what to install."""
    env = os.environ.get("CC")
    if env:
        # a CC that names nothing runnable is the same missing compiler, not a bare FileNotFoundError
        found = shutil.which(env)
        if not found:
            raise NativeBuildError(f"CC={env!r} is not a runnable C compiler for the trafikey module: " + _INSTALL_CC)
        return found
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise NativeBuildError("no C compiler (cc, gcc or clang) on PATH to build the trafikey module: " + _INSTALL_CC)
    return cc


def prebuilt() -> Path | None:
    """The module the wheel carries for these very sources (Linux x86-64 wheels), or None."""
    src = source_dir()
    files = sources(src)
    if not files:
        return None
    found = src / file_name(files)
    return found if found.is_file() else None


#: why wire 6 cannot be had in this process (the last build that failed), and the names its cell never bound
_unavailable: dict[str, object] = {"why": "", "unbound": set()}


def _wire6_line(exc: BaseException) -> str | None:
    """In a kernel, the one line for a native node that cannot be had, and for a name its cells never bound.

    A cell that ends so never bound its own names either, so they join the unbound ones: a cell
    further on that reads what such a cell would have made says so in one line too.
    """
    unbound = _unavailable["unbound"]
    assert isinstance(unbound, set)
    if isinstance(exc, NativeBuildError):
        _unavailable["why"] = str(exc).splitlines()[0]
        unbound.update(ending.cell_names(ending.running_cell()))
        return (f"wire 6 is not available on this machine ({_unavailable['why']}). Each cell that needs a "
                "native node says so in one line like this one, and the run goes on: the scripted cells run.")
    if isinstance(exc, NameError) and getattr(exc, "name", None) in unbound:
        unbound.update(ending.cell_names(ending.running_cell()))
        return (f"`{exc.name}` was never made: the cell that makes it needs wire 6, which this machine "
                f"does not have ({_unavailable['why']}).")
    return None


def build(force: bool = False) -> Path:
    """The path of a built ``trafikey.so`` for the current sources: the wheel's, the cache's, or compiled now.

    Where neither is possible, ``NativeBuildError``; in a kernel it shows as one line (``_wire6_line``)
    that lets Run All go on (``docs/decisions.md``, "no wire 6").
    """
    try:
        return _build(force)
    except NativeBuildError:
        ending.one_line((NativeBuildError, NameError), _wire6_line, "NoWire6", goes_on=True)
        raise


def _build(force: bool) -> Path:
    if not force and (found := prebuilt()) is not None:
        return found
    src = source_dir()
    files = _sources(src)
    out = cache_dir() / file_name(files)
    if out.exists() and not force:
        return out
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    cmd = command(compiler(), src, files, tmp)
    try:
        proc = run_tool(cmd)
    except OSError as exc:
        # the compiler vanished or cannot run (no execute bit): still one clear error
        raise NativeBuildError(f"could not run the C compiler {cmd[0]!r}: {exc}; " + _INSTALL_CC) from exc
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise NativeBuildError(f"building {MODULE_NAME} failed:\n{' '.join(cmd)}\n{proc.stderr.strip()}")
    # the server refuses a module file without its execute bit
    tmp.chmod(0o755)
    os.replace(tmp, out)
    return out
