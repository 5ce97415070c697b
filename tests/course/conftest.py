"""The course's tests keep committed predictions in a fresh folder per test, never the learner's."""

from __future__ import annotations

import pytest

from echomq_teach.course import predictions


@pytest.fixture(autouse=True)
def predictions_folder(tmp_path, monkeypatch):
    """Each test starts with no prediction kept (``$ECHOMQ_PREDICTIONS`` points into its own tmp folder)."""
    folder = tmp_path / "predictions"
    monkeypatch.setenv(predictions.PREDICTIONS_ENV, str(folder))
    return folder
