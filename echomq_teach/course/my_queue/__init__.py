"""Your own queue: a folder of your own Lua (one file per transition) and your consumer's beat, grown stage by stage.

``my_queue.folder()`` is the folder (``my_queue/`` beside the notebooks; made on first use), ``exercises.check``
judges a stage of it (``exercises.check("02.2", my_queue.folder())``) on a node the check starts, run by the
kit's lab exactly as the kit's own queue is run, and ``folder().load_reference("02.2")`` puts a stage's
reference in it for a learner who goes on without writing it. ``stages`` lists the stages.
"""

from __future__ import annotations

from .folder import FOLDER_ENV, Folder, folder, where
from .stages import STAGES, Stage

__all__ = ["FOLDER_ENV", "Folder", "STAGES", "Stage", "folder", "where"]
