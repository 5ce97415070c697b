"""The repository's files the kit reads at run time, in a checkout and in an installed wheel alike.

The kit reads a few files that live beside the package in the repository: the Valkey lock
(``tools/valkey.lock``), the C sources of the native module (``native/``) and the course itself
(``notebooks/``, ``docs/``). A wheel has no repository around it, so ``setup.py`` copies them into
the package as ``echomq_teach/_repo/`` with the same relative paths (``_repo/tools/valkey.lock``,
``_repo/native/…``); a checkout (or its editable install) has no such folder and reads the
repository itself. ``path("native")`` is the one place that chooses.
"""

from __future__ import annotations

from pathlib import Path

#: the folder a built wheel carries (setup.py's build writes it; a checkout never has one)
PACKAGED = Path(__file__).resolve().parent / "_repo"


def root() -> Path:
    """The folder that holds ``tools/``, ``native/``, ``notebooks/`` and ``docs/`` for this install."""
    return PACKAGED if PACKAGED.is_dir() else PACKAGED.parents[1]


def path(relative: str) -> Path:
    """``relative`` (a repository path such as ``"tools/valkey.lock"``) for this install."""
    return root() / relative


def installed_from_wheel() -> bool:
    """True when the kit runs from a built wheel (pip install), False in a checkout."""
    return PACKAGED.is_dir()
