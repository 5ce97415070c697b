"""What several checks share: comparing a learner's predictions with what the run gave."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..exercises import _Findings


def compare_predictions(f: _Findings, result: Any, seen: Mapping[str, Any], what: str = "prediction") -> None:
    """One finding per key whose predicted value is not what the run gave; a wrong shape is one finding."""
    if not f.expect(
        isinstance(result, Mapping) and set(result) == set(seen),
        f"return a dict with exactly the keys {sorted(seen)}; got {result!r}.",
    ):
        return
    for key, value in seen.items():
        f.expect(result[key] == value, f"{key}: your {what} was {result[key]!r}; the run gave {value!r}.")
