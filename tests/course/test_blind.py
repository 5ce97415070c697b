"""Predictions kept blind (issue 31): nothing a learner sees before committing a prediction answers it.

A cell whose output answers prediction K is tagged ``reveals:K`` and opens with
``with exercises.reveals("K"):``. Until K is committed the cell runs but shows one line
(``exercises.HOLD``); the notebooks are built (``tools/nbbuild.py``) and run by CI with an empty
predictions folder, so that line is what every stored notebook holds, and ``pytest --nbval`` compares
it. Then, per prediction, its tells (the forms its answer takes in a print, an assert or a sentence)
are looked for wherever a learner can read them before committing: all of the notebook's prose, above
the prediction and below it (a learner scrolls on before answering), every code cell's source, every
stored output, and every docs file the notebook names. A failure names the cell (or the docs file's
paragraph) and what in it answers which prediction.

Each prediction asks about a case no cell runs (``docs/decisions.md``, "what a kept prediction resists"),
so a cell a learner runs early, or a withheld cell's names, answer the notebook's own case, not the
prediction's; the tells below are the prediction's case, stated.
"""

from __future__ import annotations

import importlib
import inspect
import re
import runpy
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
        (r"(another|other|x's|one) job'?s? token[^.\n]{0,60}\b(ok|stale|passes|refused)\b",
         "a completion with another job's token"),
        (r"tokens?[^.\n]{0,40}\b1, 1(,| and) 1\b|\b1, 2, 3\b[^.\n]{0,40}tokens?", "three claims' tokens"),
    ),
    "02.1": (
        (r"\blate\b[^\n]{0,60}:\s*'?(ok|stale)\b", "a late worker's completion, printed"),
        (r"settles:\s*\['(ok|stale)', '(ok|stale)'\]", "two workers' completions of one job, printed"),
        (r"jobs\.(STALE|OK), jobs\.(STALE|OK)\)", "completions, asserted"),
        (r"late\w*\s*==\s*jobs\.(OK|STALE)", "a late completion, asserted"),
        (r"is now \*\*stale\*\*|so its completion passes", "a completion after a lapse, stated"),
        (r"(lapsed|lapse)[^.\n]{0,80}\bclaim\w*[^.\n]{0,40}\b(nothing|empty|none|finds pending empty)\b",
         "a claim while a lapsed lease is not swept, stated"),
        (r"tokens?:?\s*1,? then 2", "the token after a reap, printed"),
        (r"(reap|sweep)\w*[^.\n]{0,80}\b(stale|does not|refused|is not|no longer)\b[^.\n]{0,40}"
         r"before (anyone|any|the next|a new)\w* claim|"
         r"(reap|sweep)\w*[^.\n]{0,80}before (anyone|any|the next|a new)\w* claim\w*[^.\n]{0,60}"
         r"\b(stale|does not|refused|is not|no longer)\b",
         "a completion after a reap and before the next claim, stated"),
        (r"(late worker|lease lapsed|lapsed lease)[^.\n]{0,60}\b(completes|passes|still holds?|still held)\b"
         r"[^.\n]{0,40}\b(no sweep|before any sweep)|"
         r"(no sweep since|before any sweep)[^.\n]{0,30}\b(still holds?|still held|passes)\b",
         "a lapsed lease's completion with no sweep since, stated"),
        (r"fence reads no clock", "the fence's clock, stated"),
        (r"deadline is not checked|not the fence's (business|concern|job)", "the fence's clock, stated"),
        (r"fence[^.\n]{0,60}\b(compares|reads|wants)\b[^.\n]{0,60}\b(state|active)\b",
         "the fence's state test, stated"),
        (r"(with|carrying|still holds?|still held) the current token[^.\n]{0,60}\b(active|state)\b",
         "the fence's two tests, stated"),
    ),
    "03.4": (
        (r"stalled count[^\n]{0,30}\b\d\b", "a stalled count after the rounds"),
    ),
    "04.1": (
        (r"(paused[^.\n]{0,60}ghost|ghost[^.\n]{0,60}paused)[^.\n]{0,80}\b(answers|answered|pops|popped|"
         r"stays|left)\b (empty|the empty|\[\]|it|in pending|where)", "a paused queue with a ghost, stated"),
        (r"('soon'|not a number)[^.\n]{0,60}ghost[^.\n]{0,80}(answers? (empty|the empty|an error|\[\])|errs\b)|"
         r"ghost[^.\n]{0,60}('soon'|not a number)[^.\n]{0,80}(answers? (empty|the empty|an error|\[\])|errs\b)",
         "a bad lease with a ghost at the head, stated"),
        (r"('soon'|not a number)[^.\n]{0,60}paused[^.\n]{0,80}(in no set|is nowhere|(stays|is left|waits) in pending)|"
         r"paused[^.\n]{0,60}('soon'|not a number)[^.\n]{0,80}(in no set|is nowhere|(stays|is left|waits) in pending)",
         "a bad lease on a paused queue, stated"),
        (r"checks (its|the) (arguments|lease)[^.\n]{0,40}(pause|brand)[^.\n]{0,40}(head|pop)|"
         r"(pause|brand)[^.\n]{0,40}(arguments|lease)[^.\n]{0,40}(head|pop)[^.\n]{0,30}before",
         "the order of the native command's checks, stated"),
        # attack C's A3: the prose under the exercise, each sentence a case
        (r"`?EMQ\.CLAIM`?[^.\n]{0,40}paused queue[^.\n]{0,30}\b(answers|answered)\b|no native claim hands",
         "a raw native claim on a paused queue, stated"),
        (r"\bin no set at all\b|pop the job, move the token, and only then fail",
         "a bad lease's half-done claim, stated"),
        (r"so a refusal writes nothing|checks \*?before\*? its first\s+write", "the native refusal's writes, stated"),
        (r"\b(both|each) executors? pops? the ghost|pops? the ghost[^.\n]{0,40}\b(answers?|empty)\b|"
         r"ghost at the head is answered alike", "a ghost at the head, answered"),
    ),
    "05.1": (
        (r"(dead|completed|settled|finished|waiting|awaiting)[^.\n]{0,20}(job|parent)'?s?'? id[^.\n]{0,80}"
         r"\b(BadInput|DuplicateJob|lands|landed|is refused|can land|free again)\b", "a land reusing an id, answered"),
        (r"(one short|policy list)[^.\n]{0,80}(whatever|before)[^.\n]{0,40}\b(ids?|node|DuplicateJob)\b",
         "which place refuses first, stated"),
        (r"(dead job|waiting parent|completed job)[^.\n]{0,60}\b(keeps?|has|have|kept|lost|no longer has) "
         r"(its|a|no) row\b", "which of the queue's ids still have rows, stated"),
    ),
    "05.4": (
        (r":dependencies[^\n]{0,40}\[3, 3, 3, 2, 1, 0\]", "the counter after the six steps"),
        (r"(lapsed|lapse)[^.\n]{0,80}(no sweep|not swept|unswept)[^.\n]{0,80}\b(counts|counted|takes one off|"
         r"decrements?)\b", "a lapsed child's late completion, counted"),
    ),
    "06.1": (
        (r"token when it completed[^\n]{0,20}\d", "the token of the traced child's completion"),
    ),
    "07.1": (
        (r"(two|second|both)[^.\n]{0,30}(crash|kill)\w*[^.\n]{0,80}(handler runs|charges|charged)\s*[:=]?\s*\d",
         "two crashes on one job, counted"),
        (r"(claimed|handler|handled|settle-sent), then (claimed|handler|handled|settle-sent)"
         r"(\s{2,}|\s*[:=→]\s*|[^\n`]{0,40}?\b(runs?|charges?|charged|token)\b\W{0,4})\d",
         "a pair of crash points, counted"),
    ),
    "08.1": (
        (r"(second|next) driver[^.\n]{0,80}(write|transaction)[^.\n]{0,80}\b(rolled back|rolls back|nothing of|"
         r"never reached|\d+ rows)", "a driver killed inside its write, counted or stated"),
        (r"(killed|dies|died)[^.\n]{0,40}(write|transaction)[^.\n]{0,80}floor[^.\n]{0,40}\b\d+\b",
         "the floor after a kill inside a write"),
        (r"(kill\w*|dies|died|crash\w*)[^.\n]{0,40}\b(inside|in|during)\b[^.\n]{0,30}transaction[^.\n]{0,60}"
         r"\b(leaves what|leaves nothing|writes nothing|rolled back|rolls back|as it was|unchanged|changes nothing)",
         "what a kill inside a transaction leaves, stated"),
    ),
    "09.1": (
        (r"hold (ends|ended|is let go|was let go|lifted)[^.\n]{0,120}\b(valid|invalid|lost|nothing lost)\b",
         "a failover after the hold ended, judged"),
        (r"WAIT 1 100[^\n]{0,80}\b(valid|invalid|lost|loses)\b", "WAIT 1 100's run, judged"),
        (r"(replica|hold)[^.\n]{0,60}(catch(es)? up|caught up|applies (them|everything|the backlog))[^.\n]{0,80}"
         r"before the kill", "the replica caught up before the kill, stated"),
    ),
}
#: a docs file a notebook names, as its prose or code does
DOCS = re.compile(r"\bdocs/[\w.-]+\.md\b")


def _tags(cell) -> list[str]:
    return [m for t in cell.get("metadata", {}).get("tags", []) for m in TAG.findall(t)]


def _answer_values(key: str) -> list[str]:
    """The reference answer's lists and dicts, as a print or an assert shows them (a lone word is no tell)."""
    path = SOLUTIONS / registry.REGISTRY[key].solution
    names = runpy.run_path(str(path))
    (answer,) = [v for k, v in names.items() if not k.startswith("_") and isinstance(v, (dict, list))]
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


def _paragraphs(path: Path) -> list[tuple[int, str]]:
    """A docs file's paragraphs (a table's rows are one paragraph), numbered from 1."""
    text = path.read_text(encoding="utf-8")
    return [(n, p) for n, p in enumerate(re.split(r"\n\s*\n", text), 1) if p.strip()]


def seen_before_committing(key: str) -> list[tuple[str, str]]:
    """What a learner can read before committing ``key``: (where, text), where naming the cell and the part.

    All of the notebook's prose, above the prediction and below it; every code cell's source and stored
    output; and each docs file the notebook names, paragraph by paragraph.
    """
    notebook, at = _where(key)
    seen = []
    named: set[str] = set()
    for nb, i, c in CELLS:
        if nb != notebook:
            continue
        named |= set(DOCS.findall(c.source))
        if c.cell_type == "markdown":
            seen.append((f"{nb} cell {i} (prose {'above' if i < at else 'below'} {key})", c.source))
        elif c.cell_type == "code":
            seen.append((f"{nb} cell {i} (its source)", c.source))
            seen.append((f"{nb} cell {i} (its stored output)", stored_text(c.outputs)))
    for doc in sorted(named):
        for n, para in _paragraphs(ROOT / doc):
            seen.append((f"{doc} paragraph {n} (a docs file {notebook[:2]} names)", para))
    for name, text in sorted(_docstrings(notebook).items()):
        seen.append((f"{name}'s docstring (help() in {notebook[:2]})", text))
    return seen


CALL = re.compile(r"\b([a-z_]\w*)\.([a-z_]\w*)\(")


def _docstrings(notebook: str) -> dict[str, str]:
    """The docstrings a learner reads with ``help()``: of each kit module whose function a cell calls, and of that
    function (attack C found 05.1 answered by ``flows.add``'s)."""
    found: dict[str, str] = {}
    for nb, _, c in CELLS:
        if nb != notebook or c.cell_type != "code":
            continue
        for module, name in CALL.findall(c.source):
            try:
                mod = importlib.import_module(f"echomq_teach.{module}")
            except ImportError:
                continue
            found[module] = inspect.getdoc(mod) or ""
            fn = getattr(mod, name, None)
            if callable(fn):
                found[f"{module}.{name}"] = inspect.getdoc(fn) or ""
    return found


def leaks(key: str, seen: list[tuple[str, str]]) -> list[str]:
    """Each place in ``seen`` that answers ``key``, with what it gives away and what to do about it."""
    fix = {
        "source": "move the assert into a test",
        "output": f'wrap the cell in `with exercises.reveals("{key}"):` and tag it reveals:{key}',
        "prose": f'say it in the output of a cell `with exercises.reveals("{key}"):` (tag reveals:{key})',
        "docs": f"reword it so that it does not state {key}'s case",
    }
    found = []
    tells = [*TELLS[key], *((re.escape(v), "the reference answer's values") for v in _answer_values(key))]
    for where, raw in seen:
        # a sentence wraps: a paragraph's (or a call's) lines are read as one, so a tell may span them
        text = re.sub(r"[ \t]*(?<!\n)\n(?!\n)[ \t]*", " ", raw)
        for pattern, gives in tells:
            m = re.search(pattern, text, re.MULTILINE)
            if m:
                part = ("source" if "source" in where else "output" if "output" in where else
                        "docs" if where.startswith("docs/") else "prose")
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
    # what a learner could read before (each a leak the attacks found, reworded to the case asked now): each
    # must be caught, where it was
    old = {
        "02.1": [("02 cell (its source)", "assert (first.attempts, second.attempts, late, on_time) == "
                  "(1, 2, jobs.STALE, jobs.OK)"),
                 ("02 cell (prose below 02.1)", "The first worker's completion, still carrying token 1, is now "
                  "**stale** and writes nothing."),
                 ("02 cell (prose below 02.1)", "still holds the current token and an `active` row, so its completion "
                  "passes:"),
                 ("02 cell (prose below 02.1)", "While a lapsed lease is not swept, another worker's claim finds "
                  "nothing."),
                 ("02 cell (its stored output)", "the first worker's late completion: stale"),
                 # found by the second round of attacks: wrapped over lines, in a build's text, a recap, a docs file
                 ("02 cell (prose below 02.1)", "a caller whose job a sweep put back in pending does not, even before "
                  "anyone\nclaims it again."),
                 ("02 cell (prose below 02.1)", "- the fence, and a late\n  worker that completes when no sweep ran "
                  "first."),
                 ("docs/decisions.md paragraph 11 (a docs file 02 names)", "The deadline is not checked: a\nworker "
                  "whose lease lapsed still completes if no sweep ran first."),
                 ("docs/decisions.md D-3 (a docs file 02 names)", "The deadline is not checked: a lease's end is "
                  "the sweeps' business, not the fence's."),
                 ("02 cell (its source)", 'print("the fence reads no clock: with no sweep since, that worker still '
                  'held the current token and an",\n          "active row")')],
        "04.1": [("04 cell (prose below 04.1)", "On a paused queue with a ghost at its head, the script pops the ghost "
                  "and answers empty."),
                 ("04 cell (prose below 04.1)", "A lease of 'soon' with a ghost at the head: the script answers empty, "
                  "the command an error."),
                 ("04 cell (prose below 04.1)", "The native command checks its arguments, the brand, the pause flag "
                  "and the head *before* its first\nwrite"),
                 # attack C's A3, the prose under 04.1 as it was
                 ("04 cell (prose below 04.1)", "The native command reads the flag itself: a raw `EMQ.CLAIM` on a "
                  "paused queue answers the empty array."),
                 ("04 cell (prose below 04.1)", "The job is now in no set at all, with state `active` — lost until "
                  "someone repairs it by hand."),
                 ("04 cell (prose below 04.1)", "pops it and checks the pop against the peek), so a refusal writes "
                  "nothing:"),
                 ("04 cell (prose below 04.1)", "the head, with a real job waiting behind it. Both executors pop the "
                  "ghost and answer the empty\narray, minting nothing"),
                 ("04 cell (prose below 04.1)", "with a raw `EVALSHA` — and watch it pop the job, move the token, and "
                  "only then fail:"),
                 ("04 cell (prose below 04.1)", "A ghost at the head is answered alike: popped,\n  empty")],
        "05.1": [("flows.add's docstring (help() in 05)", "a land reusing a completed job's id lands: its row went "
                  "with its completion"),
                 ("05 cell (prose below 05.1)", "A policy list one short is refused on the host, whatever its ids: "
                  "the node never sees them."),
                 ("05 cell (prose below 05.1)", "A dead job keeps its row, so a land that reuses its id is refused.")],
        "05.4": [("05 cell (its stored output)", ":dependencies after each step: [3, 3, 3, 2, 1, 0]")],
        "07.1": [("07 cell (its stored output)", "handler, then handled   3 3")],
        "08.1": [("08 cell (prose below 08.1)", "The second driver, killed inside its write, leaves 30 rows on the "
                  "floor: its transaction rolled back."),
                 ("08 cell (prose below 08.1)", "(A kill right after a read, or inside a commit's\ntransaction, "
                  "leaves what the step before it left.)")],
        "09.1": [("docs/cluster.md paragraph 1 (a docs file 09 names)", "When the hold ends before the kill, WAIT 1 "
                  "100 answers the burst short and the run is valid."),
                 ("09 cell (prose below 09.1)", "The replica catches up before the kill.")],
    }
    for key, seen in old.items():
        for place in seen:
            assert leaks(key, [place]), (key, place)
    assert "move the assert into a test" in leaks("02.1", old["02.1"][:1])[0]
    assert "reword it" in leaks("09.1", old["09.1"][:1])[0]


def test_the_docstrings_a_learner_can_read_are_scanned_and_flows_add_no_longer_answers_05_1():
    from echomq_teach import flows

    seen = dict(seen_before_committing("05.1"))
    assert "flows.add's docstring (help() in 05)" in seen and "flows's docstring (help() in 05)" in seen
    # attack C: "bad input raises BadInput, an id that already exists raises DuplicateJob, and nothing is
    # written" answered 05.1's old case whole; the case now asks which ids still have rows
    assert not leaks("05.1", [("flows.add's docstring", inspect.getdoc(flows.add))])


def test_a_notebook_names_the_docs_files_it_is_scanned_with():
    seen = {where.split(" ")[0] for where, _ in seen_before_committing("09.1")}
    assert "docs/cluster.md" in seen and "docs/guarantees.md" in seen


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


def test_a_withheld_cell_takes_back_its_names_until_the_prediction_is_kept(capsys):
    # a cell's top level, as a kernel runs it: what the block computed cannot be printed from another cell
    cell = compile('with exercises.reveals("02.1"):\n    late = "stale"\n    job = "a new one"\n', "<cell>", "exec")
    names = {"exercises": exercises, "job": "the cell's own"}
    exec(cell, names)
    assert "late" not in names and names["job"] == "the cell's own"
    predictions.commit("02.1", {"any": "answer"})
    exec(cell, names)
    assert (names["late"], names["job"]) == ("stale", "a new one")


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


def test_a_stage_that_fails_before_02_1_is_kept_holds_its_findings(tmp_path):
    """Attack C's A3: 02.2's findings answered 02.1 ("the holder of a lease that lapsed … still holds the job", a
    worker "woke after a sweep" must be refused). Until 02.1 is kept, a stage's failing try shows one line in
    their place, counts no try and earns no hint; once kept, the same try shows its findings."""
    from wrong_answers.my_queue import VARIANTS

    from echomq_teach.course import my_queue

    v = VARIANTS["02.2 renew: the token, not the state"]
    mine = my_queue.folder(tmp_path / "my_queue")
    mine.load_reference("02.2")
    for file, text in v.files.items():
        (mine.path / file).write_text(text)
    tried = "02.2" in registry.TRIED  # another test of this process may have tried it
    held = exercises.check("02.2", mine)
    assert not held.ok and held.findings == [exercises.KEEP_FIRST.format(key="02.1")], str(held)
    assert ("02.2" in registry.TRIED) == tried  # no try counted, so no hint earned by it
    predictions.commit("02.1", {"any": "answer"})
    shown = exercises.check("02.2", mine)
    assert not shown.ok and all(said in str(shown) for said in v.says), str(shown)
