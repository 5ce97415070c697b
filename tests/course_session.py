"""The notebook session's plugin (tools/nbtest.sh): notebooks on parallel kernels, the longest first.

``pytest notebooks --nbval -n N --dist loadfile`` runs each notebook whole on
one worker, its own kernel, and hands the workers notebooks in collection
order. Collected in name order, the longest notebook could start last and
run alone at the end; this plugin sorts the notebooks by the run time their
last build recorded (``tools/nbbuild.py`` stores it in the notebook's metadata
as ``echomq.run_seconds``), longest first, each keeping its cells in order; a
notebook built before builds recorded it counts as 0 and goes last. It also
carries the skip check (``--strict-skips``) and, at the end, sweeps the node
folders the session's kernels left (``tests/conftest.py`` does both for the
test session).

    PYTHONPATH=tests python -m pytest notebooks --nbval -p course_session -n 2 --dist loadfile
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest
from skip_check import pytest_addoption, pytest_configure  # noqa: F401 - the unexpected-skip check

# jsonschema, which nbformat imports, builds the rfc3987-syntax package's grammar at import when that
# package is there (jupyter-events brings it): seconds of CPU in every pytest process of the session.
# The notebook format never asks for the one format it checks (IRIs), so this session goes without it.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

import nbformat  # noqa: E402 - after the line above

# a kernel of this session that commits a prediction keeps it in a folder of the session's own, never in
# the learner's Jupyter data folder (echomq_teach.course.predictions; the kernels inherit this environment).
# The folder starts empty, as the builds' did: a cell that answers a prediction shows its stored line.
os.environ["ECHOMQ_PREDICTIONS"] = tempfile.mkdtemp(prefix="echomq-predictions-")
# so is the learner's own queue's folder (course/my_queue): fresh, so a stage shows the starter's verdict it stored
os.environ["ECHOMQ_MY_QUEUE"] = tempfile.mkdtemp(prefix="echomq-my-queue-")


def recorded_seconds(path: Path) -> float:
    """How long the notebook's last build took to run it, as ``tools/nbbuild.py`` recorded; 0 if unknown."""
    try:
        nb = nbformat.read(path, as_version=4)
    except (OSError, ValueError):
        return 0.0
    seconds = nb.metadata.get("echomq", {}).get("run_seconds", 0.0)
    return float(seconds) if isinstance(seconds, (int, float)) else 0.0


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    files: dict[Path, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(Path(str(item.path)), []).append(item)
    order = sorted(files, key=lambda p: -recorded_seconds(p) if p.suffix == ".ipynb" else 0.0)
    items[:] = [item for path in order for item in files[path]]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # a kernel that nbval shuts down runs no exit hooks: its server died with it, its folder stays
    from echomq_teach.nodes.host import sweep_stale_dirs

    sweep_stale_dirs()
