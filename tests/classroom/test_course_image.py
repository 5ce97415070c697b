"""The course image in a real Docker engine (mark ``container``): JupyterLab, the kit and the notebooks.

Skips, with the reason, when no engine answers at DOCKER_HOST or the course
image is not built (``bash docker/build-course-offline.sh``, which tools/test.sh
runs when it starts its own engine). Otherwise it starts the image the way a
learner would: host networking, JupyterLab bound to 127.0.0.1 on a free port,
the token in a read-only file (never in the container's environment), and runs
a learner's first cells in a kernel inside the container, which starts an
embedded node of its own. ``$ECHOMQ_COURSE_IMAGE`` tests another tag.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from image_support import image_skip_reason

from echomq_teach import keyspace
from echomq_teach.nodes import container, valkey
from echomq_teach.nodes.host import free_port

ROOT = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("ECHOMQ_COURSE_IMAGE") or "echomq-course:local"
TOKEN_PATH = "/run/secrets/jupyter-token"
#: bounds on waits, not expectations of speed: a cold engine on a slow disk takes its time
READY_TIMEOUT_S = 90.0
CELL_TIMEOUT_S = 120


_reason = image_skip_reason(IMAGE)
pytestmark = [pytest.mark.container, pytest.mark.skipif(_reason is not None, reason=_reason or "")]


class Lab:
    """A course container and how to reach its JupyterLab."""

    def __init__(self, client, ct, port: int, token: str) -> None:
        self.client, self.ct, self.port, self.token = client, ct, port, token

    def get(self, path: str, token: str | None = "") -> tuple[int, bytes]:
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}")
        token = self.token if token == "" else token
        if token:
            req.add_header("Authorization", f"token {token}")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def log(self, lines: int = 30) -> str:
        return self.ct.logs(tail=lines).decode(errors="replace")

    def exec(self, *cmd: str) -> tuple[int, str, str]:
        code, (out, err) = self.ct.exec_run(list(cmd), demux=True)
        return code, (out or b"").decode(errors="replace"), (err or b"").decode(errors="replace")

    def python(self, code: str) -> tuple[int, str, str]:
        return self.exec("python3", "-c", code)


def _wait_ready(lab: Lab) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        lab.ct.reload()
        if lab.ct.status not in ("created", "running"):
            raise RuntimeError(f"the course container exited ({lab.ct.status}); its log:\n{lab.log()}")
        try:
            status, _ = lab.get("/api/status")
            if status == 200:
                return
        except OSError:
            pass  # not listening yet
        time.sleep(0.1)
    raise RuntimeError(f"JupyterLab did not answer /api/status within {READY_TIMEOUT_S:.0f} s; its log:\n{lab.log()}")


@pytest.fixture(scope="module")
def lab():
    client = container.engine()
    secret_dir = Path(tempfile.mkdtemp(prefix="echomq-course-"))
    secret_dir.chmod(0o700)  # only we reach the file on the host; inside, only the learner is there
    token = secrets.token_urlsafe(24)
    token_file = secret_dir / "token"
    token_file.write_text(token)
    token_file.chmod(0o644)
    ct = None
    try:
        # a free port can be taken between the probe and the bind (port_retries=0 then exits): try a fresh one
        for attempt in range(3):
            port = free_port()
            ct = client.containers.run(
                IMAGE,
                detach=True,
                network_mode="host",
                environment={"JUPYTER_PORT": str(port), "JUPYTER_TOKEN_FILE": TOKEN_PATH},
                volumes={str(token_file): {"bind": TOKEN_PATH, "mode": "ro"}},
                labels={container.OWNER_LABEL: f"{os.uname().nodename}:{os.getpid()}"},
            )
            current = Lab(client, ct, port, token)
            try:
                _wait_ready(current)
                break
            except RuntimeError:
                in_use = "already in use" in current.log()
                ct.remove(force=True)
                ct = None
                if not in_use or attempt == 2:
                    raise
        yield current
    finally:
        if ct is not None:
            ct.stop(timeout=10)  # SIGTERM: JupyterLab shuts its kernels (and their nodes) down
            ct.remove(force=True)
            cid = ct.id
            assert cid not in [c.id for c in client.containers.list(all=True)], "the course container is gone"
        client.close()
        shutil.rmtree(secret_dir, ignore_errors=True)


def test_lab_is_on_loopback_with_a_token_as_a_learner(lab):
    status, body = lab.get("/api/status")
    assert status == 200 and "started" in json.loads(body)
    assert lab.get("/api/status", token=None)[0] == 403, "no token, no access"
    assert lab.get("/api/status", token="wrong")[0] == 403
    attrs = lab.ct.attrs
    assert attrs["HostConfig"]["NetworkMode"] == "host"
    assert "--ip=127.0.0.1" in (attrs["Config"]["Entrypoint"] or []) + (attrs["Config"]["Cmd"] or [])
    assert lab.token not in json.dumps(attrs["Config"]), "the token stays out of docker inspect"
    code, out, err = lab.python("import os; print(os.getuid())")
    assert code == 0, err
    assert out.strip() != "0", "JupyterLab runs as a learner, not root"


def test_the_notebooks_are_served(lab):
    status, body = lab.get("/api/contents")
    assert status == 200, body[:300]
    served = {item["name"] for item in json.loads(body)["content"]}
    course = {nb.name for nb in (ROOT / "notebooks").glob("*.ipynb")}
    assert course and course <= served
    status, body = lab.get("/lab")
    assert status == 200 and b"<title>JupyterLab</title>" in body, "JupyterLab's app assets are in the image"


def test_the_news_question_is_off_in_the_image(lab):
    # tools/jupyterlab/overrides.json is the image's default: JupyterLab asks nothing over the first notebook
    status, body = lab.get("/lab/api/settings/@jupyterlab/apputils-extension:notification")
    assert status == 200, body[:300]
    props = json.loads(body)["schema"]["properties"]
    assert props["fetchNews"]["default"] == "false" and props["checkForUpdates"]["default"] is False


# a learner's first cells, run by a kernel of the image as JupyterLab runs them (notebook 00 itself runs in CI under
# nbval and in the hub test's student container, built from this image: its two runs)
FIRST_CELLS = [
    "from echomq_teach import jobs, start_node\nnode = start_node()\nconn = node.connector()\n"
    "print(node.__class__.__name__, 'native' if node.native else 'scripted')",
    "raw = node.client()\nprint('valkey', raw.info('server')['valkey_version'])",
    "import redis\ntry:\n    redis.Redis(port=node.port).ping()\nexcept redis.exceptions.AuthenticationError as e:\n"
    "    print('without the password the node answers:', type(e).__name__)",
    "jid = jobs.enqueue(conn, 'orders', 'hello')\nprint(jobs.claim(conn, 'orders', 30_000).id == jid)",
]
RUN_CELLS = f"""
import json, nbclient, nbformat
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in {FIRST_CELLS!r}])
nbclient.NotebookClient(nb, timeout={CELL_TIMEOUT_S}, startup_timeout=60, kernel_name="python3").execute()
print(json.dumps([o for c in nb.cells for o in c.outputs]))
"""


def test_a_kernel_runs_a_learners_first_cells_inside_the_container(lab):
    code, out, err = lab.python(RUN_CELLS)
    assert code == 0, f"the cells failed in the container:\n{err[-3000:]}"
    outputs = json.loads(out.strip().splitlines()[-1])
    text = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in outputs)
    # the kernel started its own embedded node, the pinned Valkey 9.1.2 in this container (the kernel's end stops it)
    assert "LocalNode scripted" in text and f"valkey {valkey.PINNED}" in text
    assert "without the password the node answers: AuthenticationError" in text and "True" in text


def test_a_kernel_node_is_a_child_in_the_container(lab):
    code, out, err = lab.python(
        "import json, os\n"
        "from echomq_teach import start_node\n"
        "n = start_node()\n"
        "pid = n.proc.pid\n"
        "ppid = int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])\n"
        "bind = n.client().config_get('bind')['bind']\n"
        "print(json.dumps({'exe': os.readlink(f'/proc/{pid}/exe'), 'parent': ppid == os.getpid(), 'bind': bind}))\n"
        "n.stop()\n"
    )
    assert code == 0, err
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["parent"] and seen["bind"] == "127.0.0.1"
    assert seen["exe"].endswith("/valkey-server")


def test_native_node_needs_no_compiler_in_the_image(lab):
    labels = (lab.client.images.get(IMAGE).attrs.get("Config") or {}).get("Labels") or {}
    if labels.get(container.MODULE_LABEL) == "none":
        pytest.skip("the course image was built without trafikey (native/ did not compile on the build host)")
    code, out, err = lab.python(
        "import json, os\n"
        "from echomq_teach import keyspace, start_node\n"
        "n = start_node(native=True)\n"
        "c = n.connector()\n"
        "print(json.dumps({'wire': c.wire, 'brand': n.client().get(keyspace.VERSION_KEY),\n"
        "                  'module': str(n.module_path), 'cache': os.environ.get('ECHOMQ_CACHE_DIR')}))\n"
        "c.close(); n.stop()\n"
    )
    assert code == 0, err
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["wire"] == 6 and seen["brand"] == keyspace.BRAND_WIRE6
    if labels.get("org.echomq.route") == "offline":
        # prebuilt at image build for these sources: the image has no C compiler
        assert seen["cache"] and seen["module"].startswith(seen["cache"] + "/")
