"""The accessibility audit the browser tests run: axe-core, injected into a page they already opened.

``audit(pg, scope, name, record)`` loads axe-core into the page (once: a page keeps it), runs it on
``scope`` (a locator: one widget's output, or a notebook's cells and outputs), records one line with
the count of violations by impact (``record`` is pytest's ``record_property``: the suite's summary
prints every such line, ``tests/conftest.py``), and fails on any violation rated serious or critical,
naming each rule and the elements it hit. axe-core is installed by ``tools/install-axe.sh`` at the
version and SHA-256 of ``tools/axe.lock``; a missing or different copy fails here, saying so.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "tools" / "axe.lock"
AXE = Path(os.environ.get("ECHOMQ_AXE", ROOT / "build" / "axe" / "node_modules" / "axe-core" / "axe.min.js"))
IMPACTS = ("critical", "serious", "moderate", "minor")
BLOCKING = ("critical", "serious")
#: what a notebook's audit leaves out: JupyterLab's own parts of a cell, which the course does not draw
#: (the code editor, the prompts, the cell's toolbar and its collapser); everything a cell renders stays in
JUPYTERLAB_OWN = (".jp-InputArea-editor", ".jp-InputPrompt", ".jp-OutputPrompt", ".jp-cell-toolbar",
                  ".jp-Collapser", ".jp-cell-menu")


def lock() -> dict[str, str]:
    """tools/axe.lock's settings: the version and the SHA-256 of axe.min.js."""
    pairs = (line.split("=", 1) for line in LOCK.read_text().splitlines() if "=" in line and not line.startswith("#"))
    return {k.strip(): v.strip() for k, v in pairs}


@cache
def axe_source() -> str:
    """axe-core's script, once its digest matches the lock."""
    if not AXE.exists():
        pytest.fail(f"axe-core is not installed at {AXE}: run bash tools/install-axe.sh")
    data = AXE.read_bytes()
    want = lock()["axe_min_sha256"]
    if hashlib.sha256(data).hexdigest() != want:
        pytest.fail(f"{AXE} is not the axe-core tools/axe.lock pins (SHA-256 differs): run bash tools/install-axe.sh")
    return data.decode()


@dataclass
class Violation:
    rule: str
    impact: str
    help: str
    targets: list[str]


@dataclass
class Audit:
    name: str
    version: str
    violations: list[Violation] = field(default_factory=list)
    contrast_checked: int = 0  # texts whose colours axe measured (none: it saw nothing on screen)

    def count(self, impact: str) -> int:
        """Violating elements of this impact (a rule that hits three elements counts three)."""
        return sum(len(v.targets) for v in self.violations if v.impact == impact)

    @property
    def blocking(self) -> list[Violation]:
        return [v for v in self.violations if v.impact in BLOCKING]

    def line(self) -> str:
        counts = ", ".join(f"{i} {self.count(i)}" for i in IMPACTS)
        rules = "; ".join(f"{v.rule} ({v.impact}, {len(v.targets)})" for v in self.violations)
        return (f"axe {self.version} · {self.name}: {counts} · contrast measured on {self.contrast_checked} texts"
                + (f" · {rules}" if rules else ""))

    def explain(self) -> str:
        out = []
        for v in self.blocking:
            out.append(f"{v.rule} ({v.impact}): {v.help}")
            out += [f"    {t}" for t in v.targets[:6]]
        return "\n".join(out)


# axe's answer reduced to what a failure message needs: rule, impact, help, and each element's selector
_RUN_JS = """
async ([include, exclude]) => {
  const r = await axe.run({include: include, exclude: exclude});
  const contrast = [...r.passes, ...r.violations].filter(v => v.id === 'color-contrast');
  return {
    version: axe.version,
    contrast: contrast.reduce((n, v) => n + v.nodes.length, 0),
    violations: r.violations.map(v => ({
      rule: v.id, impact: v.impact || 'minor', help: v.help,
      targets: v.nodes.map(n => n.target.join(' ') + '  ' + n.html.slice(0, 160)),
    })),
  };
}
"""


# JupyterLab's <body> is 0 px tall with overflow hidden (its shell is positioned absolutely inside it), and
# axe-core takes such an ancestor to clip everything in it: its colour-contrast rule would then check no
# text at all. A body as tall as the window changes nothing drawn and lets axe see what is on screen.
_BODY_FULL = "html, body { height: 100%; }"


def run_axe(pg, include: list, exclude: tuple[str, ...] = ()) -> tuple[str, list[Violation], int]:
    """axe-core on the elements ``include`` (element handles), leaving out what matches ``exclude``: its
    version, the violations, and how many texts had their contrast measured.

    Only what is on screen has its colours checked: scroll it into view (or fit the notebook) first.
    """
    if pg.evaluate("() => typeof window.axe") == "undefined":
        pg.add_script_tag(content=axe_source())
        pg.add_style_tag(content=_BODY_FULL)
    want = lock()["version"]
    got = pg.evaluate("() => axe.version")
    assert got == want, f"the page runs axe-core {got}, the lock pins {want}"
    res = pg.evaluate(_RUN_JS, [include, list(exclude)])
    return res["version"], [Violation(**v) for v in res["violations"]], res["contrast"]


def audit(pg, scope, name: str, record: Callable[[str, object], None] | None = None,
          exclude: tuple[str, ...] = ()) -> Audit:
    """Run axe-core on every element ``scope`` (a Playwright locator) matches; fail on serious or critical.

    The line with the counts goes to ``record("axe", line)`` (pytest's ``record_property``) and stdout.
    """
    handles = scope.element_handles()
    assert handles, f"{name}: nothing to audit (the locator matched no element)"
    handles[0].scroll_into_view_if_needed()
    version, violations, contrast = run_axe(pg, handles, exclude)
    result = Audit(name, version, violations, contrast)
    line = result.line()
    print(line)
    if record is not None:
        record("axe", line)
    assert not result.blocking, f"{name}: axe-core finds serious or critical violations\n{result.explain()}"
    # an audit that measured no text where there is some saw nothing on screen (scrolled away, or clipped
    # as axe judges it); a picture alone has no text to measure
    if any(h.evaluate("e => e.innerText.trim().length > 0") for h in handles):
        assert contrast > 0, f"{name}: axe measured the contrast of no text: nothing of it was on screen"
    return result


def audit_notebook(pg, panel, name: str, record: Callable[[str, object], None] | None = None) -> Audit:
    """A notebook as rendered: every cell, its rendered Markdown and its outputs, without JupyterLab's own parts.

    The cells, not the notebook's scroller around them: JupyterLab gives that scroller a ``feed`` role
    without the ``article`` children the role asks for, a fault of JupyterLab's that no notebook can mend.
    """
    from browser_support import fit_notebook  # here: conftest imports this module, and browser_support needs playwright

    fit_notebook(pg, panel)  # every cell on screen: axe checks the colours of what it can see
    return audit(pg, panel.locator(".jp-Notebook .jp-Cell"), name, record, exclude=JUPYTERLAB_OWN)


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001 - pytest's TerminalReporter
    """Every audit's line at the end of the run (under xdist too: the lines travel with each test's report)."""
    lines = [value for reports in terminalreporter.stats.values() for r in reports
             if getattr(r, "when", None) == "call" for key, value in getattr(r, "user_properties", ()) if key == "axe"]
    if lines:
        terminalreporter.section("accessibility audit (axe-core): violations by impact")
        for line in lines:
            terminalreporter.write_line(line)


def tab_to(pg, target, limit: int = 90, backwards: bool = False) -> int:
    """Press Tab (Shift+Tab with ``backwards``) until ``target`` (a locator) has the focus; answers the presses.

    The keyboard's own way to a control: whatever holds the focus now, the presses walk the page's
    tab order. Fails if ``target`` is not reached within ``limit`` presses (it is not in the tab order).
    """
    handle = target.element_handle()
    key = "Shift+Tab" if backwards else "Tab"
    for n in range(limit + 1):
        if pg.evaluate("e => document.activeElement === e", handle):
            return n
        pg.keyboard.press(key)
    where = pg.evaluate("() => document.activeElement && document.activeElement.outerHTML.slice(0, 120)")
    raise AssertionError(f"{limit} presses of {key} never reached the control; the focus is on {where}")
