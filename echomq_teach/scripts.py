"""The transition scripts, read from ``echomq_teach/lua/`` (the module attributes @claim2, …).

Notebooks show these files; nothing here keeps a second copy of a body.
``from_file`` and ``from_source`` make a script of your own, which a
``transitions.ScriptSet`` runs in a transition's place.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from pathlib import Path

from .errors import BadInput


@dataclass(frozen=True)
class Script:
    """One Lua transition: its course name (``@claim2``), source and SHA1."""

    name: str
    source: str

    @cached_property
    def sha(self) -> str:  # hashed once: a pipelined beat asks for it twice per job
        return hashlib.sha1(self.source.encode("utf-8")).hexdigest()

    @property
    def header(self) -> list[str]:
        """The opening comment lines: what it does, KEYS, ARGV, reply."""
        lines = [ln for ln in self.source.splitlines() if not ln.startswith("#!")]
        return [ln for ln in lines[:4] if ln.startswith("--")]


_INCLUDE = "-- @include "


def _expand(text: str) -> str:
    """Replace each ``-- @include name`` line with ``lua/includes/name.lua``: one shared piece, many scripts."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith(_INCLUDE):
            name = line[len(_INCLUDE) :].strip()
            inc = resources.files("echomq_teach").joinpath("lua", "includes", f"{name}.lua")
            if not inc.is_file():
                raise KeyError(f"no include {name!r} in echomq_teach/lua/includes/")
            out.append(inc.read_text(encoding="utf-8"))
        else:
            out.append(line)
    return "".join(out)


@cache
def load(name: str) -> Script:
    """The script ``name`` (``"claim2"`` or ``"@claim2"``) from the package's lua folder, includes expanded."""
    name = name.lstrip("@")
    path = resources.files("echomq_teach").joinpath("lua", f"{name}.lua")
    if not path.is_file():
        raise KeyError(f"no script @{name} in echomq_teach/lua/")
    return Script(name=f"@{name}", source=_expand(path.read_text(encoding="utf-8")))


def from_source(name: str, source: str) -> Script:
    """A script of your own (``@name``), its ``-- @include`` lines spliced in as the kit's are.

    What a ``transitions.ScriptSet`` runs in a transition's place: a learner's Lua.
    """
    if not isinstance(name, str) or not name.lstrip("@"):
        raise BadInput(f"a script's name must be a non-empty str, got {name!r}")
    if not isinstance(source, str) or not source.strip():
        raise BadInput(f"script @{str(name).lstrip('@')} is empty: a script needs a body")
    try:
        return Script(name=f"@{name.lstrip('@')}", source=_expand(source))
    except KeyError as exc:
        raise BadInput(f"script @{name.lstrip('@')}: {exc.args[0]}") from None


def from_file(path: str | os.PathLike[str], name: str | None = None) -> Script:
    """The Lua file at ``path`` as a script (named ``@<file name>`` unless ``name`` is given)."""
    p = Path(path)
    if not p.is_file():
        raise BadInput(f"no Lua file at {str(p)!r}")
    return from_source(name or p.stem, p.read_text(encoding="utf-8"))


def names() -> list[str]:
    """Every script's bare name, sorted."""
    folder = resources.files("echomq_teach").joinpath("lua")
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".lua"))


def show(name: str) -> str:
    """The whole script, for a notebook to print: the file's own lines first, then each piece it includes.

    The node runs each ``lua/includes/`` piece spliced in where its ``-- @include``
    line stands (``load``); printed there, the shared helpers would come before the
    transition itself, so the listing keeps the file's order and puts the pieces after
    it, each under its name. Together they are every line the node runs.
    """
    path = resources.files("echomq_teach").joinpath("lua", f"{name.lstrip('@')}.lua")
    load(name)  # the same refusal of an unknown name, and the same check of every include
    own = path.read_text(encoding="utf-8")
    pieces = [line[len(_INCLUDE) :].strip() for line in own.splitlines() if line.startswith(_INCLUDE)]
    out = [own.rstrip("\n")]
    for piece in pieces:
        text = resources.files("echomq_teach").joinpath("lua", "includes", f"{piece}.lua").read_text(encoding="utf-8")
        out.append(f"\n-- ── included where the script says '-- @include {piece}' (lua/includes/{piece}.lua) ──")
        out.append(text.rstrip("\n"))
    return "\n".join(out) + "\n"
