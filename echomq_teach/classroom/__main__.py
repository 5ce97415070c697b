"""``python -m echomq_teach.classroom``: the instructor's command (``cli``)."""

import sys

from .cli import main

sys.exit(main())
