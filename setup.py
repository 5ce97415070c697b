"""What a wheel of the kit carries beyond its Python packages (everything else is in pyproject.toml).

``pip wheel .`` (or ``pip install .``) copies into the package, as ``echomq_teach/_repo/``, the
repository's files the kit reads at run time (``echomq_teach.shipped``): the Valkey lock, the C
sources of the native module, and the course (notebooks, their solutions, the docs they link to,
nbval's sanitize file) that ``python -m echomq_teach.course init DIR`` copies out. On Linux x86-64
with a C compiler it also compiles the trafikey module from those sources, by the kit's own recipe
(``echomq_teach/nodes/trafikey_recipe.py``), into the same folder, and tags the wheel for the glibc
the module needs (``manylinux_2_N_x86_64``): the kit then starts native nodes without a compiler.
Anywhere else, or with ``ECHOMQ_WHEEL=pure``, the wheel is pure (``py3-none-any``) and the kit
compiles the module at first use. An editable install copies nothing: it reads the checkout.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
#: repository files the kit reads at run time, as globs relative to the repository
SHIPPED = [
    "tools/valkey.lock",
    "native/*.c",
    "native/*.h",
    "notebooks/*.ipynb",
    "notebooks/sanitize.cfg",
    "notebooks/solutions/*.py",
    "notebooks/solutions/my_queue/*/*",
    "docs/*.md",
]
#: the oldest glibc a manylinux tag may name
MANYLINUX_FLOOR = 17


def _recipe():
    # by path: importing echomq_teach would need its dependencies, which a build does not have
    spec = importlib.util.spec_from_file_location("trafikey_recipe", ROOT / "echomq_teach/nodes/trafikey_recipe.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _prebuilds() -> bool:
    return os.environ.get("ECHOMQ_WHEEL") != "pure" and sys.platform == "linux" and platform.machine() == "x86_64"


def _glibc_minor(so: Path) -> int:
    """The newest ``GLIBC_2.N`` symbol version the module's dynamic string table names."""
    found = [int(m) for m in re.findall(rb"GLIBC_2\.([0-9]+)", so.read_bytes())]
    return max([MANYLINUX_FLOOR, *found])


class BuildPy(build_py):
    """build_py, plus the shipped files and (where it prebuilds) the compiled module."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout itself
        dest = Path(self.build_lib) / "echomq_teach" / "_repo"
        shutil.rmtree(dest, ignore_errors=True)
        for pattern in SHIPPED:
            matched = sorted(ROOT.glob(pattern))
            if not matched:
                raise SystemExit(f"setup.py: nothing matches {pattern}: the wheel would be incomplete")
            for f in matched:
                target = dest / f.relative_to(ROOT)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, target)
        if _prebuilds():
            self._compile(dest / "native")

    def _compile(self, src: Path) -> None:
        recipe = _recipe()
        files = recipe.sources(src)
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if not cc:
            raise SystemExit(
                "setup.py: no C compiler to prebuild the trafikey module for this Linux x86-64 wheel "
                "(install one, or build a pure wheel with ECHOMQ_WHEEL=pure)"
            )
        out = src / recipe.file_name(files)
        proc = subprocess.run(recipe.command(cc, src, files, out), capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"setup.py: the trafikey module did not compile:\n{proc.stderr}")
        out.chmod(0o755)  # the server refuses a module file without its execute bit


class KitDistribution(Distribution):
    """Installed as platform code (platlib, ``Root-Is-Purelib: false``) when the module is prebuilt."""

    def has_ext_modules(self) -> bool:
        return _prebuilds()


class BdistWheel(bdist_wheel):
    """A platform wheel when the module is prebuilt inside it, else a pure one."""

    def get_tag(self) -> tuple[str, str, str]:
        if not _prebuilds():
            return super().get_tag()
        built = sorted((Path(self.bdist_dir) / "echomq_teach" / "_repo" / "native").glob("trafikey-*.so"))
        minor = _glibc_minor(built[0]) if built else MANYLINUX_FLOOR
        return "py3", "none", f"manylinux_2_{minor}_x86_64"


setup(distclass=KitDistribution, cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel})
