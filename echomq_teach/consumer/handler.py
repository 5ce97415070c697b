"""A consumer's handler and its answer: a value completes the job, an ``Error`` (or a crash) retries it."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ..jobs import Claimed


class Error(NamedTuple):
    """What a handler returns for ``{:error, reason}``: the job is retried with ``reason``."""

    reason: str


Handler = Callable[[Claimed], "str | bytes | Error | None"]


def run_handler(handler: Callable[..., object], *args: object) -> object:
    """``handler(*args)``'s answer; a handler that raises answers ``Error("<Type>: <message>")`` instead.

    The one mapping of a handler's crash to ``{:error, reason}``: the consumer
    uses it, and so does the fault lab's worker process.
    """
    try:
        return handler(*args)
    except Exception as exc:  # noqa: BLE001 - a handler's crash is an {:error, reason}
        return Error(f"{type(exc).__name__}: {exc}")


def settle_args(result: object) -> tuple[bool, str | bytes]:
    """A handler's answer as the settle takes it: (True, the result) to complete, (False, the reason) to retry."""
    if isinstance(result, Error):
        return False, result.reason
    value = "" if result is None else result
    return True, value if isinstance(value, (str, bytes)) else str(value)
