"""The files of the kit's runtime dependencies in this environment, for the offline course image.

Run by docker/build-course-offline.sh with the project's venv Python::

    .venv/bin/python docker/runtime_files.py [--also DIST]... > list

It walks the requirements of the installed ``echomq-teach`` (markers and
extras evaluated for this interpreter), plus each ``--also`` distribution,
and prints, NUL-separated, every installed file of every distribution it
reaches, relative to ``sys.prefix``: the packages in site-packages with their
``.dist-info`` (entry points), and the data files beside them
(``share/jupyter/lab``, ``etc/jupyter``, the kernel spec, console scripts in
``bin/``). The kit itself is not listed: the image carries the source tree.

Left out, to keep the image small: bytecode (stale host paths), test suites,
C sources and headers, source maps, the classic notebook's nbextensions
(JupyterLab does not load them), JupyterLab's second copy of its static assets
(``jupyterlab/static``: the server uses ``share/jupyter/lab/static``), its
browser-test extension (``jupyterlab/galata``), and Babel's locale data but
English (no language pack is installed: JupyterLab offers English only, and an
unknown locale falls back to it).
A requirement that is not installed is an error: the image would be broken.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import sys
from pathlib import Path, PurePosixPath

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = "echomq-teach"
SKIP_DIRS = {"__pycache__", "tests", "test"}
SKIP_SUFFIXES = {".pyc", ".pyo", ".c", ".h", ".pyx", ".pxd", ".map"}
SKIP_PREFIXES = (
    "share/jupyter/nbextensions/",
    "etc/jupyter/nbconfig/",
    "lib/python{v}/site-packages/jupyterlab/static/",
    "lib/python{v}/site-packages/jupyterlab/galata/",
)


def closure(roots: list[str]) -> dict[str, md.Distribution]:
    """Every installed distribution the roots (names, or requirements with extras) need here, by canonical name."""
    installed = {canonicalize_name(d.metadata["Name"]): d for d in md.distributions()}
    wanted: dict[str, set[str]] = {}
    todo = [(canonicalize_name(r.name), frozenset(r.extras)) for r in map(Requirement, roots)]
    while todo:
        name, extras = todo.pop()
        if name not in installed:
            raise SystemExit(f"runtime_files: {name} is needed but not installed in {sys.prefix}")
        if name in wanted and extras <= wanted[name]:
            continue
        wanted.setdefault(name, set()).update(extras)
        environments = [{"extra": e} for e in wanted[name] | {""}]
        for line in installed[name].requires or []:
            req = Requirement(line)
            if req.marker is None or any(req.marker.evaluate(env) for env in environments):
                todo.append((canonicalize_name(req.name), frozenset(req.extras)))
    return {n: installed[n] for n in wanted}


def keep(rel: PurePosixPath) -> bool:
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    text = rel.as_posix()
    if any(text.startswith(p.format(v=version)) for p in SKIP_PREFIXES):
        return False
    if text.startswith(f"lib/python{version}/site-packages/babel/locale-data/"):
        return rel.name == "root.dat" or rel.name == "en.dat" or rel.name.startswith("en_")
    if text.startswith(f"lib/python{version}/site-packages/") and SKIP_DIRS & set(rel.parts[:-1]):
        return False
    return "__pycache__" not in rel.parts and rel.suffix not in SKIP_SUFFIXES


def files(dists: dict[str, md.Distribution]) -> list[str]:
    prefix = Path(sys.prefix).absolute()
    out: set[str] = set()
    for name, dist in dists.items():
        if name == canonicalize_name(ROOT):
            continue  # the kit comes from the source tree, not its editable install
        for f in dist.files or []:
            path = Path(dist.locate_file(f)).absolute()
            try:
                # normalise "../../../share/..." without following symlinks
                rel = PurePosixPath(Path(*_normalise(path.parts)).relative_to(prefix))
            except ValueError:
                continue  # outside the environment (an editable finder's target)
            if keep(rel) and (prefix / rel).is_file():
                out.add(rel.as_posix())
    return sorted(out)


def _normalise(parts: tuple[str, ...]) -> list[str]:
    stack: list[str] = []
    for p in parts:
        if p == "..":
            stack.pop()
        elif p != ".":
            stack.append(p)
    return stack


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--also", action="append", default=[], help="another distribution to include, with its needs")
    args = ap.parse_args()
    dists = closure([ROOT, *args.also])
    listed = files(dists)
    sys.stdout.write("\0".join(listed) + "\0")
    print(f"runtime_files: {len(dists)} distributions, {len(listed)} files", file=sys.stderr)


if __name__ == "__main__":
    main()
