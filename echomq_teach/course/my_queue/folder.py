"""Your queue's folder: where it is, what it holds, the starter it begins from, and the references.

The folder is ``my_queue/`` in your workspace, beside the notebooks (the folder JupyterLab opens on, where a
notebook's kernel runs): one Lua file per transition you write and ``beat.py``, each edited in JupyterLab's
editor. ``$ECHOMQ_MY_QUEUE`` names another folder (the notebook builds and the tests use a fresh one each, so
that what they store is what a learner sees before writing anything).

A stage's files are copied in from the starter (``starter/`` beside this module) the first time you begin that
stage or check it; a file you have written is never overwritten, except by ``load_reference``, which keeps your
version in ``my_queue/replaced/`` first and records each file's hash (``.references.json``): a stage whose files
still hold the loaded reference passes as the reference's, never as solved, until you edit them. The references
are the course's solutions: ``solutions/my_queue/`` beside the notebooks (``notebooks/solutions/my_queue/`` in
the repository), one folder per stage.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ... import scripts, shipped, transitions
from ...errors import BadInput
from .stages import FILES, STAGES, TRANSITIONS, files_upto, first_asked, stage, upto

#: the environment variable naming your queue's folder (tests and notebook builds use a fresh one)
FOLDER_ENV = "ECHOMQ_MY_QUEUE"
#: the folder's name in the workspace, beside the notebooks
NAME = "my_queue"
#: what a starter file holds until it is written: a Lua body's one line, beat.py's one raise
STARTER_MARKS = ("is not written yet",)
_REFERENCES = Path("solutions") / NAME
#: which file holds which stage's reference, by its content's hash when loaded (an edit makes the file yours again)
LOADED = ".references.json"


def where() -> Path:
    """Your queue's folder: ``$ECHOMQ_MY_QUEUE``, else ``my_queue/`` where the notebooks run."""
    named = os.environ.get(FOLDER_ENV)
    return Path(named) if named else Path.cwd() / NAME


def references() -> Path:
    """The stages' references: ``solutions/my_queue/`` beside the notebooks, else the course's own (a checkout's
    ``notebooks/solutions/my_queue/``, or the one an installed wheel carries)."""
    for base in (Path.cwd(), shipped.path("notebooks")):
        if (base / _REFERENCES).is_dir():
            return base / _REFERENCES
    raise BadInput(f"no references found: neither {Path.cwd() / _REFERENCES} nor {shipped.path('notebooks')}"
                   f"/{_REFERENCES} is there")


def reference_of(key: str) -> Path:
    """The folder holding stage ``key``'s reference files (``solutions/my_queue/02_2/``)."""
    stage(key)
    return references() / key.replace(".", "_")


def starter_text(name: str) -> str:
    """The starter of file ``name``: its header (KEYS, ARGV, reply, one line each) and an unwritten body."""
    if name not in FILES:
        raise BadInput(f"{name!r} is no file of your queue; its files are {', '.join(FILES)}")
    return resources.files(__package__).joinpath("starter", name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class Folder:
    """Your queue's folder. ``exercises.check("02.2", mine)`` judges it: calling it answers the folder itself."""

    path: Path

    def __call__(self) -> Folder:
        return self

    def file(self, name: str) -> Path:
        if name not in FILES:
            raise BadInput(f"{name!r} is no file of your queue; its files are {', '.join(FILES)}")
        return self.path / name

    def text(self, name: str) -> str | None:
        """File ``name``'s text, or None when it is not there."""
        p = self.file(name)
        return p.read_text(encoding="utf-8") if p.is_file() else None

    def written(self, name: str) -> bool:
        """True once file ``name`` is there and no longer the starter's unwritten body."""
        text = self.text(name)
        return text is not None and not any(m in text for m in STARTER_MARKS)

    def begin(self, key: str) -> str:
        """Copy in the starter of every file the stages up to ``key`` ask for and the folder lacks (never
        overwriting one); answers the stage and each of those files: written, or still the starter."""
        self.path.mkdir(parents=True, exist_ok=True)
        readme = self.path / "README.md"
        if not readme.exists():
            readme.write_text(readme_text(), encoding="utf-8")
        names = dict.fromkeys(f for s in upto(key) for f in s.files)
        for name in names:
            p = self.file(name)
            if not p.exists():
                p.write_text(starter_text(name), encoding="utf-8")
        st = stage(key)
        lines = [f"{st.key} · {st.title}: {st.asks}."]
        lines += [f"  my_queue/{n:<13} {'written' if self.written(n) else 'the starter'}"
                  f"{'' if n in st.files else f' (stage {first_asked(n).key})'}" for n in names]
        return "\n".join(lines)

    def load_reference(self, key: str) -> str:
        """Stage ``key``'s reference files into your folder, so that you can go on to the next stage. Each file
        of yours it replaces is kept first, in ``replaced/<stage>/``. Answers what it did, one line per file."""
        src = reference_of(key)
        if not src.is_dir():
            raise BadInput(f"no reference for stage {key} at {src}")
        self.begin(key)
        lines = []
        loaded = self._loaded()
        for ref in sorted(src.iterdir()):
            if ref.name not in FILES:
                continue
            mine = self.file(ref.name)
            if mine.is_file() and self.written(ref.name) and mine.read_bytes() != ref.read_bytes():
                keep = self.path / "replaced" / key.replace(".", "_") / ref.name
                keep.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(mine, keep)
                lines.append(f"{ref.name}: the reference of {key} (yours kept in {keep.relative_to(self.path)})")
            else:
                lines.append(f"{ref.name}: the reference of {key}")
            shutil.copyfile(ref, mine)
            loaded[ref.name] = {"stage": key, "sha256": _digest(mine)}
        self._write_loaded(loaded)
        return "\n".join(lines)

    def _loaded(self) -> dict[str, dict[str, str]]:
        p = self.path / LOADED
        try:
            data = json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {}
        except ValueError:
            return {}  # a record no longer readable counts nothing as a reference
        return data if isinstance(data, dict) else {}

    def _write_loaded(self, loaded: dict[str, dict[str, str]]) -> None:
        (self.path / LOADED).write_text(json.dumps(loaded, indent=1, sort_keys=True) + "\n", encoding="utf-8")

    def reference_in(self, name: str) -> str | None:
        """The stage whose reference file ``name`` holds, as ``load_reference`` put it there (not edited since);
        None when the file is yours."""
        entry = self._loaded().get(name)
        p = self.file(name)
        if not isinstance(entry, dict) or not p.is_file() or entry.get("sha256") != _digest(p):
            return None
        return str(entry.get("stage"))

    def references_for(self, key: str) -> list[str]:
        """The stages whose references stage ``key``'s check would judge in place of your work: its own files
        (the whole queue for a stage with none of its own) when each holds a reference; [] when one is yours."""
        names = stage(key).files or files_upto(key)
        held = [self.reference_in(n) for n in names]
        return sorted({s for s in held if s}) if held and all(held) else []

    def unwritten(self, key: str) -> list[tuple[str, str]]:
        """The files the stages up to ``key`` ask for that are not written yet, each with the stage that first
        asks for it."""
        names = dict.fromkeys(name for s in upto(key) for name in s.files)
        return [(name, first_asked(name).key) for name in names if not self.written(name)]

    def run_options(self, key: str = "10.4") -> dict[str, Any]:
        """Your queue for the kit's lab to run (``Run``, the chaos widget): ``scripts``, every Lua file the stages
        up to ``key`` ask for in its transition's place, and ``beat``, your beat.py when they ask for it.
        ``BadInput`` naming the files not written yet."""
        missing = self.unwritten(key)
        if missing:
            raise BadInput("your queue is not whole yet: " + ", ".join(f"my_queue/{n} (stage {s})" for n, s in missing)
                           + " still hold the starter.")
        names = files_upto(key)
        replaced = {TRANSITIONS[n]: scripts.from_file(self.file(n), name=n.removesuffix(".lua"))
                    for n in names if n in TRANSITIONS}
        return {"scripts": transitions.ScriptSet(replaced),
                "beat": str(self.file("beat.py")) if "beat.py" in names else None}

    def status(self) -> str:
        """Each file: written, the starter, or not there yet; and each stage with what it asks."""
        lines = [f"your queue's folder: {self.path}"]
        for name in FILES:
            ref = self.reference_in(name)
            state = (f"{ref}'s reference" if ref else "written" if self.written(name)
                     else "the starter" if self.file(name).exists() else "not yet")
            lines.append(f"  {name:<13} {state:<17} (stage {first_asked(name).key})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.status()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def folder(path: str | os.PathLike[str] | None = None) -> Folder:
    """Your queue's folder (``where()`` unless ``path`` names another), made with its README on first use."""
    p = Path(path) if path is not None else where()
    if p.exists() and not p.is_dir():
        raise BadInput(f"{p} is a file: your queue needs a folder there")
    p.mkdir(parents=True, exist_ok=True)
    readme = p / "README.md"
    if not readme.exists():
        readme.write_text(readme_text(), encoding="utf-8")
    return Folder(p)


def readme_text() -> str:
    """The folder's README: what it is, and each stage with what it asks."""
    lines = [
        "# Your queue",
        "",
        "One file per transition you write, and `beat.py`, your consumer's beat. Each stage of the course adds a",
        "file here (its starter comes in when you begin the stage) or grows one; open them in JupyterLab's editor.",
        "A stage's check runs your queue on a node of its own, under a seeded nemesis, and judges it as the kit's",
        'is judged: `exercises.check("02.2", my_queue.folder())`. Stuck on a stage? `my_queue.folder()',
        '.load_reference("02.2")` puts its reference here (yours is kept in `replaced/`), and you go on; its check',
        "then says it passes with the reference loaded (not solved) until you edit the stage's files.",
        "",
        "| stage | files | what it asks |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {s.key} | {', '.join(s.files) or '(the whole queue)'} | {s.asks} |" for s in STAGES]
    return "\n".join(lines) + "\n"
