"""Zero to JupyterHub: the values file (docker/z2jh-values.yaml), and the course image started as the chart starts it.

Kubernetes cannot run here, so this proves what can be proved without it:

* the values file parses, uses only keys the chart's values schema has, in the shapes it takes (our
  own table of the chart's keys below, read from the chart's ``values.schema.yaml``), and names the
  image, the live view's service, its scope and its roles exactly as the hub config does
  (``progress.configure``, ``docker/jupyterhub_config.py``); its resource guarantee covers the
  per-student figure ``bench/bench_classroom.py`` measured; its start hook makes the course folder,
  and leaves a student's own alone;
* (mark ``container``) the course image started as KubeSpawner starts a pod from those values: uid
  1000 with group 100 added (the chart's fsGid), a fresh empty home volume owned by that group, no
  network; the start hook run as the chart runs it, then notebook 00 in a kernel that starts its
  own node, by ``docker exec`` (``jupyterhub-singleuser`` cannot reach a hub without a network).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from image_support import image_skip_reason
from traitlets.config import Config

from echomq_teach.hub import progress
from echomq_teach.nodes import container, valkey

ROOT = Path(__file__).resolve().parents[2]
VALUES = yaml.safe_load((ROOT / "docker/z2jh-values.yaml").read_text())
HUB_CONFIG = (ROOT / "docker/jupyterhub_config.py").read_text()
IMAGE = os.environ.get("ECHOMQ_COURSE_IMAGE") or "echomq-course:local"
CELL_TIMEOUT_S = 120

#: The keys of the chart's values (Zero to JupyterHub 4.x) that this course sets, and the shape each
#: takes there: a dict names its keys (None: any keys, the chart passes them through), a type or a
#: tuple of types a leaf. Taken from the chart's values.schema.yaml, whose objects refuse unknown keys.
NUMBER = (int, float)
CHART = {
    "singleuser": {
        "image": {"name": str, "tag": str, "pullPolicy": str},
        "uid": int, "fsGid": int, "cmd": (list, str), "defaultUrl": str,
        "storage": {"type": str, "capacity": str, "homeMountPath": str},
        "lifecycleHooks": {"postStart": None, "preStop": None},
        "memory": {"guarantee": (str, *NUMBER), "limit": (str, *NUMBER)},
        "cpu": {"guarantee": NUMBER, "limit": NUMBER},
        "networkPolicy": {"enabled": bool, "egress": list, "ingress": list},
        "extraEnv": None,
    },
    "hub": {
        "image": {"name": str, "tag": str},
        "services": None, "loadRoles": None, "extraConfig": None,
        "config": None,
        "service": {"extraPorts": list, "ports": None, "type": str},
        "networkPolicy": {"enabled": bool, "egress": list, "ingress": list},
    },
}


def _shape_errors(value, shape, where: str) -> list[str]:
    if shape is None:
        return [] if isinstance(value, dict) else [f"{where} must be a mapping"]
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return [f"{where} must be a mapping"]
        errors = [f"{where}.{k} is not a key of the chart's values" for k in value if k not in shape]
        for k, v in value.items():
            if k in shape:
                errors += _shape_errors(v, shape[k], f"{where}.{k}")
        return errors
    types = shape if isinstance(shape, tuple) else (shape,)
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    return [] if ok else [f"{where} is {type(value).__name__}, the chart takes {'/'.join(t.__name__ for t in types)}"]


def _hub_config() -> Config:
    """The live view as the Docker classroom's hub config adds it."""
    c = Config()
    c.JupyterHub.services, c.JupyterHub.load_roles, c.JupyterHub.custom_scopes = [], [], {}
    c.JupyterHub.extra_user_scopes = set()
    c.Spawner.environment = {}
    progress.configure(c, "/srv/jupyterhub", "http://hub:8002", 8002, ["instructor"])
    return c


def _bytes(size: str) -> float:
    m = re.fullmatch(r"([0-9.]+)([KMG])", size)
    assert m, f"{size!r} is not a size the chart takes (like 256M)"
    return float(m.group(1)) * {"K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]


def test_the_values_use_only_the_charts_keys_in_its_shapes():
    assert set(VALUES) <= set(CHART)
    assert _shape_errors(VALUES, CHART, "values") == []
    # the checker itself refuses what the chart would
    assert _shape_errors({"singleuser": {"uid": "1000", "imagee": {}}}, CHART, "v") == [
        "v.singleuser.imagee is not a key of the chart's values", "v.singleuser.uid is str, the chart takes int"]


def test_the_values_name_the_course_image_as_the_hub_config_does_and_run_it_as_uid_1000():
    su = VALUES["singleuser"]
    default = re.search(r'"ECHOMQ_COURSE_IMAGE", "([^"]+)"', HUB_CONFIG).group(1)
    assert f"{su['image']['name']}:{su['image']['tag']}" == default
    assert su["uid"] == 1000 and su["fsGid"] == 100
    # the hub's single-user server, with the Docker classroom's options (kernels on ipc, no delay)
    assert su["cmd"][0] == "/usr/local/bin/jupyterhub-singleuser"
    for option in ("--KernelManager.transport=ipc", "--ServerApp.terminals_enabled=False",
                   "--ServerApp.kernel_websocket_connection_class=echomq_teach.hub.lab_server.NoDelayConnection"):
        assert option in su["cmd"] and option in HUB_CONFIG
    # a node per kernel, nothing shared: no shared node's URL, no classroom credentials in the pods
    env = su.get("extraEnv", {})
    assert not {"ECHOMQ_URL", "ECHOMQ_NATIVE_URL", "ECHOMQ_NAMESPACE"} & set(env)
    assert su["networkPolicy"]["enabled"] is True


def test_the_values_name_the_live_views_service_scope_and_roles_as_the_hub_config_does():
    c = _hub_config()
    (want,) = c.JupyterHub.services
    hub = VALUES["hub"]
    assert set(hub["services"]) == {progress.SERVICE}
    got = hub["services"][progress.SERVICE]
    assert got["oauth_client_allowed_scopes"] == want["oauth_client_allowed_scopes"] == [progress.READ_SCOPE]
    assert got["display"] == want["display"] and got["oauth_no_confirm"] == want["oauth_no_confirm"]
    assert "from echomq_teach.hub import progress; progress.main()" in " ".join(got["command"])
    assert got["environment"]["ECHOMQ_PROGRESS_DB"] == want["environment"]["ECHOMQ_PROGRESS_DB"]
    assert got["environment"]["ECHOMQ_PROGRESS_READERS"] == want["environment"]["ECHOMQ_PROGRESS_READERS"]
    # the chart keys its roles by name; the hub config lists them
    roles = {r["name"]: {k: v for k, v in r.items() if k != "name"} for r in c.JupyterHub.load_roles}
    assert hub["loadRoles"] == roles
    assert hub["config"]["JupyterHub"]["custom_scopes"] == dict(c.JupyterHub.custom_scopes)
    # the report token: every user may hold its scope, and the hub's pre-spawn hook makes it
    assert set(hub["config"]["JupyterHub"]["extra_user_scopes"]) == {progress.REPORT_SCOPE}
    assert c.Spawner.pre_spawn_hook is progress.give_report_token
    assert "c.Spawner.pre_spawn_hook = progress.give_report_token" in hub["extraConfig"]["echomq-progress"]
    # where each student's kernel reports: the service's own path, on the port the hub's Service opens
    port = int(got["url"].rsplit(":", 1)[1])
    assert {p["port"] for p in hub["service"]["extraPorts"]} == {port}
    assert VALUES["singleuser"]["extraEnv"]["ECHOMQ_PROGRESS_URL"] == c.Spawner.environment["ECHOMQ_PROGRESS_URL"]
    assert any(p["port"] == port for rule in VALUES["singleuser"]["networkPolicy"]["egress"] for p in rule["ports"])


def test_the_resource_guarantee_covers_the_measured_student():
    readme = (ROOT / "bench/README.md").read_text()
    per_student_mb = float(re.search(r"per student \(mean PSS\): ([0-9.]+) MB", readme).group(1))
    mem = VALUES["singleuser"]["memory"]
    assert per_student_mb * 1e6 <= _bytes(mem["guarantee"]) <= _bytes(mem["limit"])
    cpu = VALUES["singleuser"]["cpu"]
    assert 0 < cpu["guarantee"] <= cpu["limit"]


def _start_hook() -> list[str]:
    return VALUES["singleuser"]["lifecycleHooks"]["postStart"]["exec"]["command"]


def test_the_start_hook_makes_the_course_once_and_keeps_a_students_work(tmp_path):
    hook = _start_hook()
    assert hook[:3] == ["/usr/local/bin/python3", "-m", "echomq_teach.course"]
    home = VALUES["singleuser"]["storage"]["homeMountPath"]
    folder = tmp_path / Path(hook[-1]).relative_to(home)
    run = [sys.executable, *hook[1:-1], str(folder)]
    first = subprocess.run(run, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert (folder / "00-start-here.ipynb").is_file() and (folder / "docs/guarantees.md").is_file()
    mine = folder / "00-start-here.ipynb"
    mine.write_text("a student's own edits")
    before = sorted((p.relative_to(folder), p.read_bytes()) for p in folder.rglob("*") if p.is_file())
    again = subprocess.run(run, capture_output=True, text=True)
    assert again.returncode == 0 and "left as it is" in again.stdout
    assert sorted((p.relative_to(folder), p.read_bytes()) for p in folder.rglob("*") if p.is_file()) == before


# -- the course image, started as the chart starts it ------------------------------------------------------
@pytest.mark.container
def test_the_course_image_starts_as_the_charts_pod_and_a_kernel_runs_00():
    reason = image_skip_reason(IMAGE)
    if reason:
        pytest.skip(reason)
    if os.geteuid() != 0:
        pytest.skip("a home volume owned by group 100, as the chart's fsGroup makes it, needs root to make")
    su = VALUES["singleuser"]
    client = container.engine()
    home = Path(tempfile.mkdtemp(prefix="echomq-z2jh-home-"))
    # what the chart's fsGroup does to a fresh volume: owned by the group, writable by it, setgid
    os.chown(home, 0, su["fsGid"])
    home.chmod(0o2775)
    ct = None
    try:
        ct = client.containers.run(
            IMAGE, ["/usr/local/bin/python3", "-c", "import time; time.sleep(900)"],
            detach=True, user=f"{su['uid']}", group_add=[str(su["fsGid"])], network_mode="none",
            working_dir=VALUES["hub"]["config"]["KubeSpawner"]["working_dir"],
            volumes={str(home): {"bind": su["storage"]["homeMountPath"], "mode": "rw"}},
            labels={container.OWNER_LABEL: f"{os.uname().nodename}:{os.getpid()}"},
        )

        def run(*cmd: str, workdir: str | None = None) -> tuple[int, str, str]:
            code, (out, err) = ct.exec_run(list(cmd), workdir=workdir, demux=True)
            return code, (out or b"").decode(errors="replace"), (err or b"").decode(errors="replace")

        code, out, err = run("/usr/local/bin/python3", "-c", "import json, os; print(json.dumps("
                             "{'uid': os.getuid(), 'groups': os.getgroups(), 'links': os.listdir('/sys/class/net')}))")
        seen = json.loads(out)
        assert code == 0 and seen["uid"] == 1000 and su["fsGid"] in seen["groups"] and seen["links"] == ["lo"], err
        assert not os.listdir(home), "the home volume starts empty"
        # the chart's postStart hook, as it runs it
        code, out, err = run(*_start_hook())
        assert code == 0, err
        assert (home / "the-queue" / "00-start-here.ipynb").is_file()
        # the command the chart gives the pod is in the image and runs (it then needs a hub)
        code, out, err = run(su["cmd"][0], "--version")
        assert code == 0 and re.match(r"\d+\.\d+", out.strip()), err
        code, out, err = run(
            "/usr/local/bin/python3", "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", "--stdout",
            f"--ExecutePreprocessor.timeout={CELL_TIMEOUT_S}", "--ExecutePreprocessor.startup_timeout=60",
            "00-start-here.ipynb", workdir=f"{su['storage']['homeMountPath']}/the-queue",
        )
        assert code == 0, f"nbconvert failed in the pod's container:\n{err[-3000:]}"
        outputs = [o for c in json.loads(out)["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
        errors = [o for o in outputs if o["output_type"] == "error"]
        assert not errors, f"{errors[0]['ename']}: {errors[0]['evalue']}" if errors else ""
        text = "".join("".join(o["text"]) if isinstance(o["text"], list) else o["text"] for o in outputs if "text" in o)
        # the kernel started its own node, the pinned Valkey, inside the pod
        assert "LocalNode scripted" in text and f"valkey {valkey.PINNED}" in text
    finally:
        if ct is not None:
            ct.remove(force=True)
        client.close()
        shutil.rmtree(home, ignore_errors=True)
