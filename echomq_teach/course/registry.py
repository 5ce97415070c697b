"""The exercise registry: what an exercise is, the list of them, and what this kernel did with them.

Both the learner's module (``exercises``) and the per-notebook checks
(``checks/``) import this one; it imports neither, so there is no import
circle. Each exercise declares its kind and belongs to the notebook its key
names (``"02.1"`` → ``02-claim-and-lease``):

* **predict** — answer from knowledge what a run will do; the first answer is
  committed (``predictions``), then the run is shown beside it;
* **diagnose** — read a real node's state and say what is wrong, or why;
* **repair** — put a broken queue right with the kit's own calls;
* **build** — write a mechanism (a script, a handler, settings) that the check
  runs; a build judged by the checker faces a seeded nemesis.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..connector import Connector
from ..errors import BadInput
from .forms import Form

KINDS = ("predict", "diagnose", "repair", "build")
#: the notebook each exercise key's first two digits name
NOTEBOOKS = {
    "01": "01-lifecycle",
    "02": "02-claim-and-lease",
    "03": "03-completion-and-recovery",
    "04": "04-two-executors",
    "05": "05-flows",
    "06": "06-workshop",
    "07": "07-when-things-fail",
    "08": "08-the-durable-floor",
    "09": "09-cluster",
    "10": "10-case-files",
}


@dataclass
class Verdict:
    """The outcome of one check: solved or not, and why."""

    exercise: str
    ok: bool
    findings: list[str] = field(default_factory=list)
    #: drawn below the text when a notebook displays the verdict (a failing run's timeline); never in ``str``
    shown: list[Callable[[], Any]] = field(default_factory=list, repr=False, compare=False)
    #: False when the judge's own machinery failed (``Unjudged``): no verdict on the answer, no try counted
    judged: bool = field(default=True, repr=False, compare=False)
    #: the stages whose loaded references passed (your queue's stages): a pass that is not the learner's own
    reference: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def __str__(self) -> str:
        # a title that is a question reads badly with a colon after its "?"
        sep = " —" if self.exercise.endswith("?") else ":"
        refs = ", ".join(self.reference)
        head = (f"✓ {self.exercise}{sep} passes with the reference{'s' if len(self.reference) > 1 else ''} for "
                f"{refs} loaded (not solved: write {'them' if len(self.reference) > 1 else 'it'} yourself to solve "
                "it)." if self.ok and self.reference else
                f"✓ {self.exercise}{sep} solved." if self.ok else f"✗ {self.exercise}{sep} not yet." if self.judged
                else f"? {self.exercise}{sep} could not be judged.")
        return "\n".join([head] + [f"  • {f}" for f in self.findings])

    def __repr__(self) -> str:
        return str(self)

    def __bool__(self) -> bool:
        return self.ok

    def _ipython_display_(self) -> None:
        # a cell ending in the verdict shows its text, then what it draws (a run's timeline, with its faults),
        # each figure with its words (lab.figures)
        from ..lab import figures

        print(str(self))
        for draw in self.shown:
            figures.show(draw())


class Unjudged(Exception):
    """The judge's own machinery failed mid-run (a worker it could not restart on a loaded machine): the run says
    nothing about the answer, so there is no verdict and no try; the message says what failed."""


class Findings:
    """What a check found not yet true, in the order it found it."""

    def __init__(self) -> None:
        self.items: list[str] = []
        #: what a check says whether or not it passed (a measure beside the kit's), after the findings
        self.notes: list[str] = []
        #: what a verdict draws below its text in a notebook (a failing run's timeline): callables answering a figure
        self.shown: list[Callable[[], Any]] = []
        #: the stages whose loaded references the check judged in place of the learner's work (your queue)
        self.references: list[str] = []

    def expect(self, cond: bool, message: str) -> bool:
        """Keep ``message`` when ``cond`` is false; answers ``cond``."""
        if not cond:
            self.items.append(message)
        return cond


class Calls(list[tuple[str, tuple[Any, ...]]]):
    """A setup's answer when the learner's function is called once per queue of the check's: ``(queue, args)``
    each (the verify is handed the list of answers, and this)."""


Setup = Callable[[Any, str], tuple[Any, ...]]
Verify = Callable[[Any, str, Any, tuple[Any, ...], Findings], None]


@dataclass
class Exercise:
    key: str
    title: str
    kind: str
    #: setup(conn, queue) prepares the queue and answers the arguments the check needs
    setup: Setup
    verify: Verify | None
    hint: str
    #: the reference solution's file name in ``notebooks/solutions/``
    solution: str = ""
    # -- a prediction: run(conn, queue) builds its queue and answers what the run gave, once the answer is kept
    run: Callable[[Any, str], Any] | None = None
    #: the form of a prediction's answer (data, never a function: ``course/forms.py``)
    form: Form | None = None
    #: what a committed prediction is told after its run (the hint, as an explanation, when not given)
    explain: str = ""
    # -- a build judged without the learner's node: judge(answer, findings) runs it on a node of its own
    judge: Callable[[Any, Findings], None] | None = None

    @property
    def notebook(self) -> str:
        return NOTEBOOKS[self.key[:2]]

    def explanation(self) -> str:
        return self.explain or self.hint.removeprefix("Hint: ")

    def hints(self) -> list[str]:
        """What a failed check adds to its findings: where the hint is, never the hint itself."""
        return [f'stuck? exercises.hint("{self.key}") gives a hint now that you have tried.']


#: every exercise by key (the check modules fill it as they are imported)
REGISTRY: dict[str, Exercise] = {}
# what this kernel did: a passing check, a try that did not pass (its hint may be asked for), a hint given
SOLVED: set[str] = set()
#: your queue's stages that passed with a loaded reference, not the learner's files (never counted solved)
REFERENCED: set[str] = set()
TRIED: set[str] = set()
HINTED: set[str] = set()


def _register(ex: Exercise) -> None:
    if ex.kind not in KINDS:
        raise BadInput(f"exercise {ex.key}: kind must be one of {KINDS}, got {ex.kind!r}")
    if ex.key[:2] not in NOTEBOOKS or ex.key[2:3] != ".":
        raise BadInput(f"exercise key {ex.key!r} names no notebook (NN.M, NN one of {sorted(NOTEBOOKS)})")
    REGISTRY[ex.key] = ex


def _no_setup(conn: Any, queue: str) -> tuple[Any, ...]:
    return ()


def exercise(
    key: str, title: str, hint: str, *, kind: str, solution: str = "", hint_on_request: bool = True
) -> Callable[..., Any]:
    """Register a verify function of a diagnose, repair or build exercise; ``@setup_for`` adds its setup.

    Every hint is on request (``hint_on_request`` stays for callers that passed it).
    """

    def wrap(verify: Verify) -> Verify:
        _register(Exercise(key, title, kind, _no_setup, verify, hint, solution))
        return verify

    return wrap


def prediction(
    key: str, title: str, hint: str, *, solution: str, form: Form, explain: str = "",
) -> Callable[..., Any]:
    """Register the run of a prediction: ``run(conn, queue)`` builds its queue and answers what really happens.

    The learner answers with data of ``form`` (never a function); the run comes only after that answer is
    kept, so nothing the check builds exists while the learner answers.
    """

    def wrap(run: Callable[[Any, str], Any]) -> Callable[..., Any]:
        _register(Exercise(key, title, "predict", _no_setup, None, hint, solution, run=run, form=form,
                           explain=explain))
        return run

    return wrap


def judged(key: str, title: str, hint: str, *, solution: str) -> Callable[..., Any]:
    """Register a build whose check starts its own node: ``judge(answer, findings)``."""

    def wrap(judge: Callable[[Any, Findings], None]) -> Callable[..., Any]:
        _register(Exercise(key, title, "build", _no_setup, None, hint, solution, judge=judge))
        return judge

    return wrap


def setup_for(key: str) -> Callable[..., Any]:
    def wrap(fn: Callable[[Connector, str], tuple[Any, ...]]) -> Callable[..., Any]:
        REGISTRY[key].setup = fn
        return fn

    return wrap


class Entry(NamedTuple):
    """One line of the catalog."""

    key: str
    notebook: str
    kind: str
    title: str


class Catalog(list[Entry]):
    """Every exercise of the course, by key; shown as a table."""

    def __repr__(self) -> str:
        lines = [f"{'':5} {'notebook':<27} {'kind':<9} title"]
        lines += [f"{e.key:<5} {e.notebook:<27} {e.kind:<9} {e.title}" for e in self]
        return "\n".join(lines)

    __str__ = __repr__


def catalog() -> Catalog:
    """Every exercise: its key, its notebook, its kind (predict, diagnose, repair, build) and its title."""
    return Catalog(Entry(k, e.notebook, e.kind, e.title) for k, e in sorted(REGISTRY.items()))


@dataclass
class Progress:
    """What this kernel did with the exercises: solved, tried without solving, hints asked for."""

    solved: list[str]
    tried: list[str]
    hinted: list[str]
    #: stages of your queue that passed with a loaded reference only
    referenced: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        if not (self.solved or self.tried or self.hinted or self.referenced):
            return "no exercise checked in this kernel yet: exercises.catalog() lists them."
        lines = []
        for k in sorted(set(self.solved) | set(self.tried) | set(self.hinted) | set(self.referenced)):
            e = REGISTRY[k]
            state = ("solved" if k in self.solved else "reference (passes with the reference loaded)"
                     if k in self.referenced else "tried, not yet solved")
            hint = " · hint asked" if k in self.hinted else ""
            lines.append(f"{k:<5} {e.kind:<9} {e.title}: {state}{hint}")
        lines.append(f"{len(self.solved)} of {len(REGISTRY)} solved in this kernel")
        return "\n".join(lines)

    __str__ = __repr__


def progress() -> Progress:
    """What this kernel solved, tried and asked hints for (a restart starts it again; predictions stay kept)."""
    return Progress(sorted(SOLVED), sorted(TRIED - SOLVED - REFERENCED), sorted(HINTED), sorted(REFERENCED - SOLVED))
