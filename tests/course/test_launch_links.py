"""One click from the README: a launch link per notebook, in the README's table and in 00's course map.

Binder cannot be reached from here, so only the links' form is checked: each one opens its own
notebook (``urlpath=lab/tree/notebooks/NN-name.ipynb``, a file that exists) in JupyterLab, from the
repository ``pyproject.toml`` names (``[project.urls] Source``), at its default branch's head, where
Binder reads ``binder/``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
SOURCE = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Source"]
LINK = re.compile(r"\[Binder\]\((https://mybinder\.org/v2/gh/([^/]+/[^/]+)/HEAD\?urlpath=lab/tree/([^)\s]+))\)")


#: a reference-style link's definition, ``[b04]: https://…`` (00's lines under its table use them)
DEFINITION = re.compile(r"^(?:# )?\[([a-z0-9]+)\]: (\S+)$")


def _links_by_row(text: str, row: re.Pattern[str]) -> dict[str, list[tuple[str, str, str]]]:
    """Each table row's notebook and the Binder links in that row."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    for line in text.splitlines():
        m = row.match(line)
        if m:
            found[m.group(1)] = LINK.findall(line)
    return found


def _check(found: dict[str, list[tuple[str, str, str]]], where: str) -> None:
    assert sorted(found) == NOTEBOOKS, f"{where}: a row per notebook"
    repo = re.fullmatch(r"https://github\.com/([^/]+/[^/]+)", SOURCE).group(1)
    for nb, links in found.items():
        assert len(links) == 1, f"{where}: {nb}'s row has {len(links)} launch links"
        (url, on, path) = links[0]
        assert on == repo, f"{where}: {nb} opens {on}, not this repository ({repo})"
        assert path == f"notebooks/{nb}.ipynb", f"{where}: {nb}'s link opens {path}"
        assert (ROOT / path).is_file() and (ROOT / "binder" / "environment.yml").is_file()


def test_the_readme_has_a_launch_link_per_notebook():
    _check(_links_by_row((ROOT / "README.md").read_text(), re.compile(r"^\| `(\d\d-[a-z0-9-]+)` \|")), "README")


def test_00s_course_map_has_a_launch_link_per_notebook():
    # under the table, "[04][b04]" for each notebook, its address in a reference definition below
    source = (ROOT / "notebooks/src/00-start-here.py").read_text()
    refs = {m.group(1): m.group(2) for m in map(DEFINITION.match, source.splitlines()) if m}
    by_number = {nb[:2]: nb for nb in NOTEBOOKS}
    found: dict[str, list[tuple[str, str, str]]] = {}
    for number, ref in re.findall(r"\[(\d\d)\]\[([a-z0-9]+)\]", source):
        found.setdefault(by_number.get(number, number), []).extend(LINK.findall(f"[Binder]({refs.get(ref, '?')})"))
    _check(found, "00's course map")
    # and the built notebook shows the same (it is what a learner opens)
    built = (ROOT / "notebooks/00-start-here.ipynb").read_text()
    for nb in NOTEBOOKS:
        assert f"urlpath=lab/tree/notebooks/{nb}.ipynb" in built
