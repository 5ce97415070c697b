"""Exercise checks for the course notebooks: what a learner calls.

``exercises.check("02.1", my_answer, conn)`` runs a check, ``exercises.hint("02.1")``
gives a hint after a try that did not pass, ``exercises.catalog()`` lists every
exercise with its notebook and its kind, ``exercises.progress()`` says what this
kernel solved, tried and asked hints for.

A check never crashes the notebook: an exception inside the learner's code, or
one the check's own reads meet in what that code left, is reported as a
finding. One exception is no finding: a check that needs a native node on a
machine that cannot have one (``NativeBuildError``) raises it, and a kernel
shows it as its one ``NoWire6`` line and goes on (``nodes.trafikey``). A
check never prints its hint (a stored output would show the answer). By kind:

* a **diagnose**, **repair** or **build** exercise hands the learner's function a
  fresh queue on their own node, then reads the real node; a diagnosis is also
  watched while it runs, and refused when it wrote (``checks/diagnosis.py``);
* a **predict** exercise takes the learner's answer as data, never a function
  (``forms``: its form is checked strictly, and a wrong form keeps nothing and
  earns no hint); its first answer of the right form is committed
  (``predictions``: sealed, logged, kept across kernel restarts), and only then
  does the check build its queue, run the scenario and show what it gave, with
  why; every later try is graded on that first answer, shown beside the run;
* a **build judged by the checker** (``02.2``) is handed nothing: it starts a node
  of its own and runs the learner's mechanism under a seeded nemesis.

The check's own calls (its setup, its reads, the run of a prediction) go through
connectors of its own, so the learner's trace holds the learner's calls only; when
it is done, every key it made under its fresh queue's name is deleted (``cleaned``),
whatever the verdict.

Reference solutions live in ``notebooks/solutions/``, one file per exercise,
named ``NN_M_*.py`` (``Exercise.solution``); the checks live in
``echomq_teach/course/checks/``, one module per notebook, and register
themselves in ``registry`` when imported.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

from .. import ids, keyspace
from ..nodes.trafikey import NativeBuildError
from . import forms, predictions, progress_report
from .checks import diagnosis
from .registry import (
    HINTED,
    REFERENCED,
    REGISTRY,
    SOLVED,
    TRIED,
    Calls,
    Catalog,
    Exercise,
    Findings,
    Progress,
    Unjudged,
    Verdict,
    catalog,
    progress,
)

__all__ = ["Verdict", "Catalog", "Progress", "catalog", "check", "hint", "progress", "reveals", "titles", "NO_HINT_YET",
           "NO_HINT_BEFORE_PREDICTING", "HOLD", "KEEP_FIRST"]

NO_HINT_YET = "No hint yet: write your try and run its check first. A hint comes after a try that did not pass."
NO_HINT_BEFORE_PREDICTING = ("No hint before you predict: a prediction's hint comes once your first prediction "
                             "(of the right form) is kept.")


def hint(key: str) -> str:
    """The hint of exercise ``key``, once a try at it did not pass in this kernel; before that, why not.

    A prediction's hint comes once a prediction of it is kept (in any kernel: the kept one is graded), never
    before: an answer of the wrong form keeps nothing and earns no hint.
    """
    if key not in REGISTRY:
        raise KeyError(f"no exercise {key!r}; the exercises are {', '.join(sorted(REGISTRY))}")
    if REGISTRY[key].kind == "predict":
        kept = predictions.committed(key)
        if kept is None or kept.forged:
            return NO_HINT_BEFORE_PREDICTING
    elif key not in TRIED:
        return NO_HINT_YET
    HINTED.add(key)
    progress_report.hint_asked(key)  # the live view's "hint" mark (course/progress_report.py)
    return REGISTRY[key].hint


def fresh_queue(key: str) -> str:
    """A queue name nobody has used: exercise runs never see each other's jobs."""
    return f"ex{key.replace('.', '-')}-{ids.mint()[3:]}"


def titles() -> dict[str, str]:
    return {k: e.title for k, e in sorted(REGISTRY.items())}


_STARTER = "your function still raises NotImplementedError: write your try in its body."


def _starter(key: str, ex: Exercise, why: str = _STARTER) -> Verdict:
    # not a try yet: the starter as the notebook stores it; no hint is earned
    return Verdict(f"{key} {ex.title}", False,
                   [why, f'after a try that does not pass, exercises.hint("{key}") gives a hint.'])


def _raised(exc: Exception) -> str:
    where = traceback.extract_tb(exc.__traceback__)[-1]
    return f"your function raised {type(exc).__name__}: {exc} (line {where.lineno})."


def _stopped(exc: Exception) -> str:
    """What stopped a judge: the error and its message, and where it was raised (a bare ``assert`` says nothing
    on its own)."""
    where = traceback.extract_tb(exc.__traceback__)[-1]
    at = f"{where.filename.rsplit('/echomq_teach/', 1)[-1]}, line {where.lineno}: {(where.line or '').strip()}"
    return f"{type(exc).__name__}: {exc}; raised at {at}" if str(exc) else f"{type(exc).__name__} at {at}"


def check(key: str, solution: Callable[..., Any], *conns: Any) -> Verdict:
    """Check ``solution`` for exercise ``key``: a connector for the exercises that read your node.

    A diagnose, repair or build exercise calls ``solution(conn, queue, *setup_args)`` on a fresh
    queue; a prediction takes ``solution`` as the answer itself (data), and runs on ``conn`` only once
    that answer is kept; a judged build calls ``solution()``. On a hub the verdict also goes to the
    instructor's live view, in the background and silently.
    """
    tried = key in TRIED
    TRIED.discard(key)  # is this check a try? (a starter's verdict is not)
    try:
        verdict = _check(key, solution, *conns)
        unkept = _unkept_before(key) if not verdict.ok and key in TRIED else None
        if unkept is not None:
            TRIED.discard(key)
            verdict = Verdict(verdict.exercise, False, [KEEP_FIRST.format(key=unkept)])
    finally:  # an earlier try stays counted, also when this check raised (no native module here)
        if tried:
            TRIED.add(key)
    if verdict.judged:  # a run the judge could not finish is no try: the live view is told nothing
        progress_report.report(key, verdict)  # on a hub only (course/progress_report.py)
    return verdict


#: what a try that did not pass says while a prediction its findings would answer is not kept (one line)
KEEP_FIRST = ("keep your prediction of {key} first: this check's findings could answer it. Run {key}'s cell with "
              "your prediction, then this one again (this try was not counted).")

#: per prediction, which checks' findings state its answer: every stage of your queue probes the renewal's fence,
#: and says what the caller of a lapsed or swept lease should have been answered, which is 02.1's question
#: (attack C: 02.2's findings answered 02.1)
ANSWERED_BY: dict[str, Callable[[Exercise], bool]] = {
    "02.1": lambda ex: ex.solution.startswith("my_queue/"),
}


def _unkept_before(key: str) -> str | None:
    """A prediction whose answer the findings of ``key`` would state, not kept yet; else None.

    A try that fails shows findings, and a finding names what the queue should have done; so until that
    prediction is kept, the try shows one line in their place, counts nothing, and earns no hint.
    """
    ex = REGISTRY[key]
    for k, answered in ANSWERED_BY.items():
        if answered(ex):
            kept = predictions.committed(k)
            if kept is None or kept.forged:
                return k
    return None


def _check(key: str, solution: Callable[..., Any], *conns: Any) -> Verdict:
    if key not in REGISTRY:
        raise KeyError(f"no exercise {key!r}; the exercises are {', '.join(sorted(REGISTRY))}")
    ex = REGISTRY[key]
    if ex.judge is not None:
        return _judged(ex, solution)
    if not conns:
        what = "your_prediction" if ex.kind == "predict" else "your_function"
        return Verdict(f"{key} {ex.title}", False, ["this check needs your node: hand it your connector "
                                                    f'(exercises.check("{key}", {what}, conn)).'])
    queue = fresh_queue(key)
    # the check's own calls go through connectors of its own: the learner's trace holds the learner's calls only
    # (a setup's moves, read off the trace, would tell a diagnosis what happened without a look at the queue)
    own = tuple(c.fork() if hasattr(c, "fork") else c for c in conns)
    try:
        if ex.run is not None:
            return _predicted(ex, solution, own if len(own) > 1 else own[0], queue)
        return _on_queue(ex, solution, conns, own, queue)
    finally:
        cleaned(own, queue)
        for mine, theirs in zip(own, conns):
            if mine is not theirs:
                mine.close()


def cleaned(conns: tuple[Any, ...], queue: str) -> None:
    """Delete every key the check made under ``queue`` (its own queues are named after it) on each node it used.

    A classroom's shared node would pile up the checks' queues otherwise; a node that went away is left be.
    """
    diagnosis.forget(queue)
    pattern = "*{" + keyspace.namespaced(queue) + "*"  # a fresh name: letters, digits and '-', nothing a glob reads
    seen: set[int] = set()
    for conn in conns:
        client = getattr(conn, "client", None)
        if client is None:
            continue
        # one node's forks share a pool; a cluster client has none of its own, and is its own unit
        where = id(getattr(client, "connection_pool", client))
        if where in seen:
            continue
        seen.add(where)
        try:
            by_tag: dict[str, list[str]] = {}
            for key in client.scan_iter(match=pattern, count=1000):
                by_tag.setdefault(key[key.index("{"):key.index("}") + 1], []).append(key)
            for keys in by_tag.values():  # one hashtag, one slot: a cluster-mode node takes them in one UNLINK
                client.unlink(*keys)
        except Exception:  # noqa: BLE001 - the verdict stands; what could not be removed is the node's to keep
            continue


def _on_queue(ex: Exercise, solution: Callable[..., Any], conns: tuple[Any, ...], own: tuple[Any, ...],
              queue: str) -> Verdict:
    """Set up ``queue`` and check the learner's function on it: the learner's ``conns``, the check's ``own``."""
    key = ex.key
    conn = own if len(own) > 1 else own[0]
    try:
        args = ex.setup(conn, queue)
    except NativeBuildError:
        raise  # the machine's, not the learner's: one line in a kernel, and no try counted
    except Exception as exc:  # noqa: BLE001 - e.g. a node that went away: said, not raised
        return Verdict(f"{key} {ex.title}", False,
                       [f"the check could not prepare its queue: {type(exc).__name__}: {exc}."])
    f = Findings()
    try:
        with diagnosis.reading(queue, conns):
            if isinstance(args, Calls):  # one call per queue of the check's (each with its own arguments)
                result: Any = [solution(*conns, q, *a) for q, a in args]
            else:
                result = solution(*conns, queue, *args)
    except NotImplementedError:
        return _starter(key, ex)
    except Exception as exc:  # noqa: BLE001 - the learner's bug is a finding, not a crash
        return _failed(ex, [_raised(exc)])
    try:
        assert ex.verify is not None
        ex.verify(conn, queue, result, args, f)
    except Exception as exc:  # noqa: BLE001 - what the learner left can trip the check's own reads
        f.items.append(
            f"the check could not read your queue ({type(exc).__name__}: {exc}): your function left it in a "
            "shape no transition makes, e.g. a set written as another type or an id without its row."
        )
    return _failed(ex, f.items) if f.items else _passed(ex, [])


_BLANKS = ("your prediction still holds `...`: replace each `...` with what you predict. Your first prediction "
           "of the right form is kept, and graded.")


def _not_kept(ex: Exercise, findings: list[str]) -> Verdict:
    # nothing kept: not a try yet, so no hint is earned (a hint before predicting would answer it)
    return Verdict(f"{ex.key} {ex.title}", False, [*findings, "nothing was kept: a prediction is kept (and graded) "
                                                   "once its form is right."])


def _predicted(ex: Exercise, answer: Any, conn: Any, queue: str) -> Verdict:
    """A prediction: keep the first answer of the right form, then build ``queue`` and run, then grade what was kept.

    The answer is data; the queue the run uses (named, nothing in it) does not exist until the answer is kept.
    """
    assert ex.form is not None and ex.run is not None
    said = [note] if (note := predictions.env_changed()) else []
    if callable(answer):
        return _not_kept(ex, [*said, "a prediction is your answer itself, as data (a dict, a list): "
                              f"{ex.form.describe()}; not a function, which could run the scenario instead of "
                              "predicting it."])
    if forms.has_blanks(answer):
        return Verdict(f"{ex.key} {ex.title}", False, [*said, _BLANKS])
    wrong = ex.form.problem(answer)
    if wrong is None:
        try:
            answer = predictions.plain(answer)
        except ValueError as exc:
            wrong = str(exc)
    kept = predictions.committed(ex.key)
    if kept is not None and kept.forged:
        return Verdict(f"{ex.key} {ex.title}", False, [*kept.notes, *said])
    if kept is None:
        if wrong is not None:
            return _not_kept(ex, [*said, wrong])
        kept = predictions.commit(ex.key, answer)
    said = [*kept.notes, *said]
    try:
        seen = predictions.plain(ex.run(conn, queue))
    except NativeBuildError:
        raise
    except Exception as exc:  # noqa: BLE001 - a node that went away mid-run: said, not raised
        return Verdict(f"{ex.key} {ex.title}", False,
                       [*said, f"your prediction is kept, but the run failed: {type(exc).__name__}: {exc}; "
                        "check again."])
    f = Findings()
    if isinstance(seen, dict) and isinstance(kept.answer, dict):
        for k, v in seen.items():
            f.expect(kept.answer.get(k) == v, f"{k}: you predicted {kept.answer.get(k)!r}; the run gave {v!r}.")
    else:
        f.expect(kept.answer == seen, f"you predicted {kept.answer!r}; the run gave {seen!r}.")
    notes = []
    if answer != kept.answer:
        # the learner should see this try too, and whether it would have matched the run
        matches = ", though it matches the run" if answer == seen else ""
        notes.append(f"graded: your first prediction, kept since {kept.at} ({kept.answer!r}); this try "
                     f"({answer!r}) is not graded{matches}.")
    notes.append(f"why: {ex.explanation()}")
    if f.items:
        TRIED.add(ex.key)
        return Verdict(f"{ex.key} {ex.title}", False, [*said, *f.items, *notes, *ex.hints()])
    return _passed(ex, [*said, *notes])


def _judged(ex: Exercise, solution: Callable[..., Any]) -> Verdict:
    """A build judged on a node of the check's own: the learner's function is handed nothing."""
    try:
        answer = solution()
    except NotImplementedError:
        return _starter(ex.key, ex)
    except Exception as exc:  # noqa: BLE001 - the learner's bug is a finding, not a crash
        return _failed(ex, [_raised(exc)])
    f = Findings()
    try:
        assert ex.judge is not None
        ex.judge(answer, f)
    except NativeBuildError:
        raise
    except NotImplementedError as exc:  # a folder whose files are still the starter (your queue's stages)
        return _starter(ex.key, ex, str(exc) or _STARTER)
    except Unjudged as exc:  # the judge's failure, never the answer's: no verdict, no try
        return Verdict(f"{ex.key} {ex.title}", False, [
            f"the run could not be judged: {exc}. That was the judge's machinery, not your answer: no try was "
            f'counted and nothing was decided. Check again (exercises.check("{ex.key}", ...)); if it happens '
            "again, the machine is busy: close other kernels, or wait a minute."], judged=False)
    except Exception as exc:  # noqa: BLE001 - a judge that could not run is said, not raised
        f.items.append(f"the judge could not finish its run ({_stopped(exc)}).")
    if f.items:
        verdict = _failed(ex, f.items + f.notes)
    elif f.references:  # your queue judged with references loaded in place of your files: it passes, unsolved
        REFERENCED.add(ex.key)
        verdict = Verdict(f"{ex.key} {ex.title}", True, f.notes, reference=tuple(f.references))
    else:
        verdict = _passed(ex, f.notes)
    verdict.shown = f.shown
    return verdict


def _passed(ex: Exercise, notes: list[str]) -> Verdict:
    SOLVED.add(ex.key)
    return Verdict(f"{ex.key} {ex.title}", True, notes)


def _failed(ex: Exercise, findings: list[str]) -> Verdict:
    TRIED.add(ex.key)
    return Verdict(f"{ex.key} {ex.title}", False, [*findings, *ex.hints()])


#: what a cell that answers a prediction prints until that prediction is committed (one line)
HOLD = "(hidden until you predict {key}: run {key}'s cell first, then this one again)"


def reveals(key: str) -> predictions.Withheld:
    """``with exercises.reveals("02.1"):`` around a cell whose output answers prediction 02.1.

    Until 02.1 is committed the cell still runs, but shows one line (``HOLD``) in place of its
    output; run again after the commitment, it shows everything. The cell is tagged
    ``reveals:02.1`` too (tests/course/test_blind.py holds the two together).
    """
    ex = REGISTRY.get(key)
    if ex is None or ex.kind != "predict":
        predicts = ", ".join(k for k, e in sorted(REGISTRY.items()) if e.kind == "predict")
        raise KeyError(f"{key!r} is no prediction; the predictions are {predicts}")
    return predictions.Withheld(key, HOLD.format(key=key))


# the checks register themselves on import (``checks`` above: registry holds them; nothing here is imported back)
