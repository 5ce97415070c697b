"""A wheelhouse for ``pip install --no-index``, made on this machine without any network.

Run with the project's venv Python::

    .venv/bin/python docker/wheelhouse.py OUT [REQUIREMENT]...     (default: echomq-teach[course])

It writes into OUT (made if missing):

* the kit's own wheel, built from a clean copy of the repository's files (``git ls-files``:
  nothing untracked-and-ignored, no stale ``build/``) by ``pip wheel --no-deps
  --no-build-isolation`` with the venv's setuptools, so ``setup.py`` prebuilds the module;
* one wheel for every other distribution the requirements need (``runtime_files.closure``),
  packed back from the files that distribution installed in the venv (its ``RECORD``), with its
  own ``WHEEL`` file and tags and a new ``RECORD``: the same files pip unpacked from the wheel it
  fetched, so a clean machine installs what the suite was tested with. Bytecode and the files
  pip writes at install time (``INSTALLER``, ``REQUESTED``, ``direct_url.json``, console
  scripts) are left out; pip writes them again. Files outside site-packages go where the
  wheel format puts them (``<name>.data/data/share/jupyter/…``).

Entries are stored, not compressed: a wheelhouse lives for one test, and pip unpacks stored
entries faster. Prints one line per wheel and a total.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata as md
import io
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from packaging.utils import canonicalize_name
from runtime_files import closure

REPO = Path(__file__).resolve().parents[1]
KIT = "echomq-teach"
#: written by pip when it installs: a repacked wheel leaves them out
INSTALL_TIME = {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json"}


def build_kit(out: Path) -> Path:
    """The kit's wheel, built from a clean copy of the files git knows (tracked, or new and not ignored)."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True, capture_output=True,
    ).stdout.decode().split("\0")
    with tempfile.TemporaryDirectory(prefix="echomq-wheel-") as tmp:
        src = Path(tmp) / "src"
        for rel in filter(None, listed):
            f = REPO / rel
            if f.is_file() and not f.is_symlink():
                (src / rel).parent.mkdir(parents=True, exist_ok=True)
                (src / rel).write_bytes(f.read_bytes())
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
             "-w", str(out), str(src)],
            capture_output=True, text=True,
        )
        if proc.returncode != 0:
            raise SystemExit(f"wheelhouse: the kit's wheel did not build:\n{proc.stdout}\n{proc.stderr}")
    (wheel,) = out.glob("echomq_teach-*.whl")
    return wheel


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _tags(wheel_file: str) -> str:
    """``py3-none-any`` (or a compressed set, ``cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64``)."""
    tags = [line.split(":", 1)[1].strip() for line in wheel_file.splitlines() if line.startswith("Tag:")]
    parts = [sorted({t.split("-")[i] for t in tags}) for i in range(3)]
    return "-".join(".".join(p) for p in parts)


def _console_scripts(dist: md.Distribution) -> set[str]:
    return {ep.name for ep in dist.entry_points if ep.group in ("console_scripts", "gui_scripts")}


def repack(dist: md.Distribution, out: Path) -> Path:
    """One installed distribution as a wheel in ``out``."""
    site = Path(str(dist.locate_file("")))
    (meta,) = [f for f in dist.files or [] if f.name == "METADATA" and f.parts[0].endswith(".dist-info")]
    info = site / meta.parts[0]
    prefix = Path(sys.prefix).resolve()
    stem = info.name[: -len(".dist-info")]
    data_dir = f"{stem}.data"
    scripts = _console_scripts(dist)
    entries: list[tuple[str, Path]] = []
    for f in dist.files or []:
        rel = PurePosixPath(str(f))
        if "__pycache__" in rel.parts or rel.suffix == ".pyc":
            continue
        if rel.parts[0] == info.name and rel.name in INSTALL_TIME:
            continue
        path = (site / rel).resolve()
        if not path.is_file():
            continue
        if rel.parts[0] == "..":
            inside = path.relative_to(prefix)
            if inside.parts[0] == "bin":
                if inside.name in scripts:
                    continue  # pip makes console scripts again, for the interpreter it installs with
                arc = f"{data_dir}/scripts/{inside.name}"
            else:
                arc = f"{data_dir}/data/{inside.as_posix()}"
        else:
            arc = rel.as_posix()
        entries.append((arc, path))
    wheel_meta = (info / "WHEEL").read_text()
    name = f"{stem}-{_tags(wheel_meta)}.whl"
    target = out / name
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as zf:
        for arc, path in sorted(entries):
            data = path.read_bytes()
            zi = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = (path.stat().st_mode & 0o777 | 0o100000) << 16  # keeps an execute bit
            zf.writestr(zi, data)
            writer.writerow([arc, _digest(data), len(data)])
        writer.writerow([f"{info.name}/RECORD", "", ""])
        zf.writestr(f"{info.name}/RECORD", record.getvalue())
    return target


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    out = Path(sys.argv[1]).resolve()
    wanted = sys.argv[2:] or [f"{KIT}[course]"]
    out.mkdir(parents=True, exist_ok=True)
    made = [build_kit(out)]
    for key, dist in sorted(closure(wanted).items()):
        if key != canonicalize_name(KIT):
            made.append(repack(dist, out))
    total = sum(w.stat().st_size for w in made)
    for w in made:
        print(f"{w.stat().st_size / 1e6:8.2f} MB  {w.name}")
    print(f"wheelhouse: {len(made)} wheels, {total / 1e6:.1f} MB in {out}")


if __name__ == "__main__":
    main()
