"""tools/debian-uris.sh: the backports suite reuses the URIs this machine's own sources use.

Each case is an /etc/apt of its own in a temporary folder; the addresses are
made-up loopback ones, so no mirror's name is written here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "debian-uris.sh"

MAIN = "http://127.0.0.1:9/debian"
SECURITY = "http://127.0.0.1:9/debian-security"
SNAPSHOT = "http://127.0.0.1:9/archive/debian/20250520T000000Z"


def uris(apt: Path, codename: str = "bookworm") -> list[str]:
    out = subprocess.run(["bash", str(SCRIPT), codename, str(apt)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def apt_dir(tmp_path: Path, sources: dict[str, str] | None = None, lst: str | None = None) -> Path:
    d = tmp_path / "apt"
    (d / "sources.list.d").mkdir(parents=True)
    for name, text in (sources or {}).items():
        (d / "sources.list.d" / name).write_text(text)
    if lst is not None:
        (d / "sources.list").write_text(lst)
    return d


DEB822 = f"""Types: deb
# a comment naming another archive: {SNAPSHOT}
URIs: {MAIN}/
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: {SECURITY}
Suites: bookworm-security
Components: main
"""


def test_deb822_main_suite_only_not_security(tmp_path):
    assert uris(apt_dir(tmp_path, {"debian.sources": DEB822})) == [MAIN]


def test_one_line_sources_with_options(tmp_path):
    lst = (
        f"# deb {SNAPSHOT} bookworm main\n"
        f"deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] {MAIN} bookworm main\n"
        f"deb {SECURITY} bookworm-security main\n"
        f"deb-src {MAIN} bookworm main\n"
    )
    assert uris(apt_dir(tmp_path, lst=lst)) == [MAIN]


def test_a_snapshot_is_reused_as_it_is(tmp_path):
    text = f"Types: deb\nURIs: {SNAPSHOT}\nSuites: bookworm\nComponents: main\n"
    assert uris(apt_dir(tmp_path, {"snap.sources": text})) == [SNAPSHOT]


def test_a_disabled_stanza_and_another_suite_are_left_out(tmp_path):
    disabled = f"Enabled: no\nTypes: deb\nURIs: {SNAPSHOT}\nSuites: bookworm\nComponents: main\n"
    other = "Types: deb\nURIs: http://127.0.0.1:9/vendor\nSuites: nodistro\nComponents: main\n"
    d = apt_dir(tmp_path, {"a.sources": disabled, "b.sources": other, "debian.sources": DEB822})
    assert uris(d) == [MAIN]


def test_backports_already_listed_is_found(tmp_path):
    text = f"Types: deb\nURIs: {MAIN}\nSuites: bookworm-backports\nComponents: main\n"
    d = apt_dir(tmp_path, {"debian.sources": DEB822, "bp.sources": text})
    assert uris(d, "bookworm-backports") == [MAIN]
    assert uris(apt_dir(tmp_path / "x", {"debian.sources": DEB822}), "bookworm-backports") == []


def test_nothing_to_reuse_answers_nothing(tmp_path):
    assert uris(apt_dir(tmp_path)) == []


@pytest.mark.parametrize("args", [[], ["a", "b", "c"]])
def test_usage(args):
    out = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "usage" in out.stderr
