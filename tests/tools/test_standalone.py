"""The repository stands alone: no file points outside it, and every D-n label points into docs/.

A learner, an instructor or an engineer who clones the repository must find every document it
names inside it. The design decisions the kit relies on (D-1 to D-8) live in
``docs/decisions.md``; a label anywhere else names that file.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = ROOT / "docs" / "decisions.md"
# a relative path that climbs: "../x", "../../x/y"
CLIMB = re.compile(r"(?<![\w.])((?:\.\./)+)([\w.@{}-]+(?:/[\w.@{}-]+)*)")
# names of the workplace's shared folder, which is not part of the repository
OUTSIDE = re.compile(r"/work/|\bshared/(DESIGN\.md|notes|seed)\b|\.\./shared\b")
LABEL = re.compile(r"\bD-(\d+)\b")
BINARY = {".png", ".so", ".o", ".sqlite3", ".gz", ".whl", ".ico"}


def _files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):  # a tarball without git: walk the tree
        names = [
            str(p.relative_to(ROOT))
            for p in ROOT.rglob("*")
            if p.is_file() and not {".git", ".venv", "artifacts"} & set(p.relative_to(ROOT).parts)
        ]
    return [ROOT / n for n in names if (ROOT / n).suffix not in BINARY and (ROOT / n).is_file()]


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""


def climbs_out(path: Path, text: str) -> list[str]:
    """The relative paths in ``text`` that resolve outside the repository, read from ``path``'s folder."""
    bad = []
    for m in CLIMB.finditer(text):
        target = m.group(2)
        if target.endswith("...") or target == "..":  # an elided example, not a reference
            continue
        resolved = (path.parent / (m.group(1) + target)).resolve()
        if not resolved.is_relative_to(ROOT):
            bad.append(m.group(0))
    return bad


def test_the_checks_catch_what_they_look_for():
    # made-up references, put together from parts so that this file itself names no path outside
    shared = "shared"
    here = ROOT / "docs" / "x.md"
    outside = f"../{shared}/DESIGN.md"
    assert climbs_out(ROOT / "x.md", f"see {outside}") == [outside]
    assert climbs_out(here, "see ../README.md and ../docs/floor.md") == []
    assert climbs_out(ROOT / "notebooks" / "src" / "a.py", "../../../etc/passwd") == ["../../../etc/passwd"]
    assert OUTSIDE.search(f"({shared}/notes/valkey-8-module-api.md)")
    assert not OUTSIDE.search("a shared node; shared/ is not named")


def test_no_file_refers_to_a_path_outside_the_repository():
    bad = []
    for path in _files():
        text = _text(path)
        rel = path.relative_to(ROOT)
        bad += [f"{rel}: {ref}" for ref in climbs_out(path, text) if path != Path(__file__)]
        bad += [f"{rel}: {m.group(0)}" for m in OUTSIDE.finditer(text) if path != Path(__file__)]
    assert bad == []


def test_every_decision_label_points_into_docs():
    defined = {int(n) for n in re.findall(r"^### D-(\d+) ·", DECISIONS.read_text(encoding="utf-8"), re.M)}
    assert defined == set(range(1, 9)), defined
    unpointed, undefined = [], []
    for path in _files():
        if path in (DECISIONS, Path(__file__)):
            continue
        for n, line in enumerate(_text(path).splitlines(), 1):
            labels = {int(x) for x in LABEL.findall(line)}
            if not labels:
                continue
            undefined += [f"{path.relative_to(ROOT)}:{n} D-{x}" for x in sorted(labels - defined)]
            if "docs/decisions.md" not in line:
                unpointed.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:90]}")
    assert undefined == []
    assert unpointed == [], "a D-n label names docs/decisions.md on its own line"
