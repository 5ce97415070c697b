"""The form of a prediction's answer: what is kept is data of a form the exercise names, checked strictly.

A prediction is answered with data, never a function (a function could run the scenario instead of
predicting it). Each prediction declares its answer's form from the pieces below; ``problem(answer)``
says what is not of that form, naming the form expected, and a prediction of the wrong form is refused
with that message and nothing kept. ``starter()`` is the template a notebook's prediction cell starts
from: the form with ``...`` where each answer goes, which is not a try yet (``has_blanks``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Form:
    """A piece of an answer's form: what it accepts, how it is said, and its blank."""

    def describe(self) -> str:
        raise NotImplementedError

    def problem(self, value: Any, where: str = "your prediction") -> str | None:
        """What is wrong with ``value`` at ``where``, naming the form expected; None when it fits."""
        raise NotImplementedError

    def starter(self) -> Any:
        return ...


@dataclass(frozen=True)
class Word(Form):
    """One of a few words, e.g. ``"ok"`` or ``"stale"``."""

    choices: tuple[str, ...]

    def describe(self) -> str:
        return "one of " + ", ".join(f'"{c}"' for c in self.choices)

    def problem(self, value: Any, where: str = "your prediction") -> str | None:
        if isinstance(value, str) and value in self.choices:
            return None
        return f"{where} is {self.describe()}; got {value!r}."


@dataclass(frozen=True)
class Count(Form):
    """A whole number from ``low`` (an int, never a bool, a float or a word)."""

    low: int = 0
    high: int | None = None

    def describe(self) -> str:
        top = f" … {self.high}" if self.high is not None else ", …"
        return f"a whole number ({self.low}, {self.low + 1}{top})"

    def problem(self, value: Any, where: str = "your prediction") -> str | None:
        if _is_count(value) and value >= self.low and (self.high is None or value <= self.high):
            return None
        return f"{where} is {self.describe()}; got {value!r}."


@dataclass(frozen=True)
class Each(Form):
    """A list of ``n`` answers, each of one form (``names`` say what each position is, for the messages)."""

    form: Form
    n: int
    names: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"a list of {self.n}, each {self.form.describe()}"

    def problem(self, value: Any, where: str = "your prediction") -> str | None:
        if not isinstance(value, (list, tuple)) or len(value) != self.n:
            return f"{where} is {self.describe()}; got {value!r}."
        for i, item in enumerate(value):
            name = self.names[i] if i < len(self.names) else f"item {i + 1}"
            wrong = self.form.problem(item, f"{where} ({name})")
            if wrong:
                return wrong
        return None

    def starter(self) -> Any:
        return [self.form.starter() for _ in range(self.n)]


@dataclass(frozen=True)
class Order(Form):
    """The given labels, each once, in an order."""

    labels: tuple[str, ...]

    def describe(self) -> str:
        return f"a list of the {len(self.labels)} labels, each once"

    def problem(self, value: Any, where: str = "your prediction") -> str | None:
        if isinstance(value, (list, tuple)) and sorted(value, key=str) == sorted(self.labels):
            return None
        return f"{where} is {self.describe()} (the labels: {list(self.labels)}); got {value!r}."


@dataclass(frozen=True)
class Record(Form):
    """A dict with exactly these keys, each value of its own form."""

    fields: tuple[tuple[str, Form], ...]

    @classmethod
    def of(cls, fields: dict[str, Form]) -> Record:
        return cls(tuple(fields.items()))

    @property
    def keys(self) -> list[str]:
        return [k for k, _ in self.fields]

    def describe(self) -> str:
        return "a dict with exactly the keys " + ", ".join(repr(k) for k in self.keys)

    def problem(self, value: Any, where: str = "your prediction") -> str | None:
        if not isinstance(value, dict) or set(value) != set(self.keys):
            got = sorted(value, key=str) if isinstance(value, dict) else value
            return f"{where} is {self.describe()}; got {got!r}."
        for k, form in self.fields:
            wrong = form.problem(value[k], repr(k) if where == "your prediction" else f"{where}[{k!r}]")
            if wrong:
                return wrong
        return None

    def starter(self) -> Any:
        return {k: form.starter() for k, form in self.fields}


def has_blanks(value: Any) -> bool:
    """Whether ``value`` still holds a ``...`` (the starter's blank) anywhere: not a try yet."""
    if value is ...:
        return True
    if isinstance(value, dict):
        return any(has_blanks(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_blanks(v) for v in value)
    return False


def pair(form: Form) -> Each:
    """``(scripted, native)``: one answer per executor."""
    return Each(form, 2, ("scripted", "native"))


def words(*choices: str) -> Word:
    return Word(tuple(choices))


def record(fields: dict[str, Form]) -> Record:
    return Record.of(fields)


def order(labels: Sequence[str]) -> Order:
    return Order(tuple(labels))
