"""Predictions kept blind (issue 31): nothing a learner sees before committing a prediction answers it.

A cell whose output answers prediction K is tagged ``reveals:K`` and opens with
``with exercises.reveals("K"):``. Until K is committed the cell runs but shows one line
(``exercises.HOLD``); the notebooks are built (``tools/nbbuild.py``) and run by CI with an empty
predictions folder, so that line is what every stored notebook holds, and ``pytest --nbval`` compares
it. Then, per prediction, its tells (the forms its answer takes in a print, an assert or a sentence)
are looked for where a learner can read them before committing: every stored output of the notebook,
every code cell's source, and all the prose above the prediction (its goals and its intro among it).
A failure names the cell and what in it answers which prediction.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

import nbformat
import pytest
from test_course_notebooks import stored_text

from echomq_teach.course import exercises, predictions, registry

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
SOLUTIONS = ROOT / "notebooks" / "solutions"
CHECK = re.compile(r'exercises\.check\("(\d\d\.\d+)"')
TAG = re.compile(r"reveals:(\d\d\.\d+)")
#: a cell that withholds its output: comments, then one with-block around the rest of the cell
OPENS = re.compile(
    r'^(?:#[^\n]*\n)*with exercises\.reveals\("(\d\d\.\d+)"\):[^\n]*\n(?:(?:    [^\n]*)?\n)*(?:    [^\n]*)?$'
)
PREDICTIONS = sorted(k for k, e in registry.REGISTRY.items() if e.kind == "predict")

#: per prediction, what would answer it, as (pattern, what it gives away); the reference answer's lists and
#: dicts (``_answer_values``) are looked for as well
TELLS: dict[str, tuple[tuple[str, str], ...]] = {
    "01.3": (
        (r"A-rush[^\n]{0,80}\bzz-late\b.*\n?.*claimed", "a claim order with both custom ids"),
    ),
    "01.4": (
        (r"(wrong|nobody|another|unknown)[\w ]{0,12}token[^\n]{0,40}\b(stale|ok)\b", "a completion with a wrong token"),
        (r"(again|redeliver\w*|twice)[^\n]{0,30}\b(stale|ok)\b\W*$", "a completion sent again"),
        (r"jobs\.STALE, True, jobs\.OK, jobs\.STALE", "the three completions, asserted"),
    ),
    "02.1": (
        (r"\blate\b[^\n]{0,60}:\s*'?(ok|stale)\b", "a late worker's completion, printed"),
        (r"settles:\s*\['(ok|stale)', '(ok|stale)'\]", "two workers' completions of one job, printed"),
        (r"jobs\.(STALE|OK), jobs\.(STALE|OK)\)", "completions, asserted"),
        (r"late\w*\s*==\s*jobs\.(OK|STALE)", "a late completion, asserted"),
        (r"late worker still completes|a late worker[^.]{0,40}completes when no sweep", "case 1, stated"),
    ),
    "03.4": (
        (r"stalled count[^\n]{0,30}\b\d\b", "a stalled count after the rounds"),
    ),
    "04.1": (
        (r"on a paused queue:\s*\[", "a raw claim on a paused queue, printed"),
        (r"raw_reply\s*==\s*\[", "a raw claim on a paused queue, asserted"),
        (r"the claim answered \[", "a raw claim after pause() returned, printed"),
        (r"script error:|native refusal:", "a claim with a lease of 'soon', printed"),
        (r"first claim: (None|\[)", "a claim with a ghost at the head, printed"),
        (r"window\[\"wire (4|6)\"\]", "a claim in the pause window, asserted"),
        (r"ghost[^.\n]{0,40}answered alike|answered alike by both", "the ghost case, stated"),
        (r"\"arithmetic on a nil value\"|startswith\(\"EMQARG\"\)", "a lease of 'soon', asserted"),
    ),
    "05.1": (
        (r"(share an id|already a job's|one short)[^\n]{0,40}(BadInput|DuplicateJob|landed)\b", "a land's answer"),
    ),
    "05.4": (
        (r":dependencies[^\n]{0,40}\[2, 2, 2, 1, 0\]", "the counter after the five steps"),
    ),
    "06.1": (
        (r"token when it completed[^\n]{0,20}\d", "the token of the traced child's completion"),
    ),
    "07.1": (
        (r"charge_first[^\n]{0,80}(handler runs|charges)\s*[:=]\s*\d", "charge_first under a crash, counted"),
    ),
    "08.1": (
        (r"floor: \d+ rows · stream: \d+ entries · in both", "a driver killed between commit and trim, counted"),
        (r"trimmed \d+ · stream \d+ · floor \d+", "the next driver's first fold, counted"),
        (r"\(20, 30, 10, 0\)", "the kill's counts, asserted"),
        (r"nothing lost, nothing twice", "the next driver's outcome, stated"),
    ),
    "09.1": (
        (r"verdict:\s*(valid|invalid)\b", "a failover's verdict, printed"),
        (r"without an answer:\s*\d+", "the burst's unanswered enqueues, printed"),
        (r"enqueue_unknown\s*==\s*\d+", "the burst's unanswered enqueues, asserted"),
        (r"assert (not )?(r|w|plain\.report|waited\.report)\.valid", "a failover's verdict, asserted"),
        (r"what asynchronous replication lost", "the verdict without WAIT, stated"),
        (r"guarantees\.md#wait-keeps-confirmed-writes", "the verdict with WAIT, named by its ledger entry"),
    ),
}


def _tags(cell) -> list[str]:
    return [m for t in cell.get("metadata", {}).get("tags", []) for m in TAG.findall(t)]


def _answer_values(key: str) -> list[str]:
    """The reference answer's lists and dicts, as a print or an assert shows them (a lone word is no tell)."""
    path = SOLUTIONS / registry.REGISTRY[key].solution
    spec = importlib.util.spec_from_file_location(f"blind_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (fn,) = [f for _, f in inspect.getmembers(module, inspect.isfunction) if f.__module__ == module.__name__]
    answer = fn(*[None] * len(inspect.signature(fn).parameters))
    values = list(answer.values()) if isinstance(answer, dict) else [answer]
    return [repr(v) for v in values if isinstance(v, (list, tuple, dict))]


def _cells() -> list[tuple[str, int, nbformat.NotebookNode]]:
    return [(p.name, i, c) for p in NOTEBOOKS for i, c in enumerate(nbformat.read(p, as_version=4).cells)]


CELLS = _cells()
TAGGED = [(nb, i, c) for nb, i, c in CELLS if c.cell_type == "code" and _tags(c)]


def _where(key: str) -> tuple[str, int]:
    """The notebook and the index of the cell that checks prediction ``key``."""
    for nb, i, c in CELLS:
        if c.cell_type == "code" and key in CHECK.findall(c.source):
            return nb, i
    raise AssertionError(f"no notebook checks {key}")


def seen_before_committing(key: str) -> list[tuple[str, str]]:
    """What a learner can read before committing ``key``: (where, text), where naming the cell and the part."""
    notebook, at = _where(key)
    seen = []
    for nb, i, c in CELLS:
        if nb != notebook:
            continue
        if c.cell_type == "markdown" and i < at:
            seen.append((f"{nb} cell {i} (prose above {key})", c.source))
        elif c.cell_type == "code":
            seen.append((f"{nb} cell {i} (its source)", c.source))
            seen.append((f"{nb} cell {i} (its stored output)", stored_text(c.outputs)))
    return seen


def leaks(key: str, seen: list[tuple[str, str]]) -> list[str]:
    """Each place in ``seen`` that answers ``key``, with what it gives away and what to do about it."""
    fix = {
        "source": "move the assert into a test",
        "output": f'wrap the cell in `with exercises.reveals("{key}"):` and tag it reveals:{key}',
        "prose": f"say it after {key}",
    }
    found = []
    tells = [*TELLS[key], *((re.escape(v), "the reference answer's values") for v in _answer_values(key))]
    for where, text in seen:
        for pattern, gives in tells:
            m = re.search(pattern, text, re.MULTILINE)
            if m:
                part = "source" if "source" in where else "output" if "output" in where else "prose"
                found.append(f"{where} shows {gives} ({m.group(0)!r}): {fix[part]}")
    return found


def test_every_prediction_has_its_tells():
    assert sorted(TELLS) == PREDICTIONS


@pytest.mark.parametrize("key", PREDICTIONS)
def test_nothing_a_learner_sees_before_committing_answers_the_prediction(key):
    found = leaks(key, seen_before_committing(key))
    assert not found, f"{key} is answered before it is committed:\n" + "\n".join(found)


@pytest.mark.parametrize(("notebook", "index", "cell"), TAGGED, ids=[f"{nb[:2]}-{i}" for nb, i, _ in TAGGED])
def test_a_cell_that_reveals_a_prediction_stores_only_its_hold(notebook, index, cell):
    (key,) = _tags(cell)
    ex = registry.REGISTRY.get(key)
    assert ex is not None and ex.kind == "predict", f"{notebook} cell {index}: reveals:{key} names no prediction"
    assert ex.notebook == notebook.removesuffix(".ipynb"), f"{notebook} cell {index}: {key} is another notebook's"
    m = OPENS.match(cell.source)
    assert m and m.group(1) == key, (
        f'{notebook} cell {index} is tagged reveals:{key} but does not open with `with exercises.reveals("{key}"):`'
    )
    hold = exercises.HOLD.format(key=key)
    assert [o.get("text", "").strip() for o in cell.outputs] == [hold], (
        f"{notebook} cell {index} stores more than its hold line: build it with an empty predictions folder"
    )


def test_a_cell_that_withholds_its_output_is_tagged():
    for nb, i, c in CELLS:
        if c.cell_type == "code" and "exercises.reveals(" in c.source:
            m = OPENS.match(c.source)
            assert m, f"{nb} cell {i}: `with exercises.reveals(…)` must open the cell, around all of it"
            key = m.group(1)
            assert _tags(c) == [key], f"{nb} cell {i}: withheld until {key} is committed, so tag it reveals:{key}"


def test_the_tells_catch_the_leaks_issue_31_names():
    # what the notebooks showed before: each must be caught, where it was
    old = {
        "02.1": [("02 cell (its source)",
                  "assert (first.attempts, second.attempts, late, on_time) == (1, 2, jobs.STALE, jobs.OK)"),
                 ("02 cell (prose above 02.1)", "so a late worker still completes when no sweep ran first."),
                 ("02 cell (its stored output)", "the first worker's late completion: stale")],
        "04.1": [("04 cell (prose above 04.1)", "4. See a ghost at the head answered alike by both."),
                 ("04 cell (its stored output)", "raw EMQ.CLAIM on a paused queue: []")],
        "08.1": [("08 cell (its source)", "assert (len(on_floor), len(in_stream), len(both), len(neither)) == "
                                          "(20, 30, 10, 0)"),
                 ("08 cell (its stored output)", "floor: 20 rows · stream: 30 entries · in both: 10 · in neither: 0")],
        "09.1": [("09 cell (its source)", "assert w.valid and w.enqueue_unknown == 20"),
                 ("09 cell (its stored output)", "no WAIT — verdict: invalid · every lost job is one of the burst")],
    }
    for key, seen in old.items():
        found = leaks(key, seen)
        assert {where for where, _ in seen} == {f.split(" shows ")[0] for f in found}, (key, found)
    assert "move the assert into a test" in leaks("02.1", old["02.1"][:1])[0]


# -- the mechanism: withheld until committed, on a kernel or not ------------------------------------------------
def test_a_withheld_cell_runs_but_shows_only_its_hold_until_the_prediction_is_kept(capsys):
    ran = []
    with exercises.reveals("02.1"):
        print("the answer")
        ran.append(1)
    hold = capsys.readouterr().out
    assert ran == [1] and "the answer" not in hold and "hidden until you predict 02.1" in hold
    predictions.commit("02.1", {"any": "answer"})
    with exercises.reveals("02.1"):
        print("the answer")
    assert capsys.readouterr().out == "the answer\n"


def test_a_withheld_cell_that_raises_raises_and_closes_its_figures(capsys):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    before = set(plt.get_fignums())
    with pytest.raises(ZeroDivisionError):
        with exercises.reveals("08.1"):
            plt.figure()
            print("half of it")
            1 / 0  # noqa: B018 - the cell's own error
    assert set(plt.get_fignums()) == before  # an open figure would be drawn after the cell
    assert "half of it" not in capsys.readouterr().out


def test_only_a_prediction_can_be_withheld():
    with pytest.raises(KeyError, match="is no prediction; the predictions are 01.3"):
        exercises.reveals("02.2")
