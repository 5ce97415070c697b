"""The old name of :mod:`echomq_teach.snapshots`, kept for one release.

``inspect`` shadowed the standard library's module of that name in a learner's
mind (and in notebook 02, which reads source with it): new code imports
``from echomq_teach import snapshots``. This alias re-exports the same objects.
"""

from __future__ import annotations

from .snapshots import Change, Snapshot, diff, snapshot

__all__ = ["Change", "Snapshot", "diff", "snapshot"]
