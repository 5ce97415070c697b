"""Consumers: the client processes that drive the lifecycle (EchoMQ.Consumer, Pool, Metronome).

Nothing in the queue moves on its own: a lapsed lease stays in active and a
due retry stays on the schedule until a client calls reap or promote. A
standalone ``Consumer`` does that on every beat; in a ``Pool`` one
``Metronome`` per queue does it for all the pool's consumers.

One module per piece: ``consumer`` (the ``Consumer`` and its run loop), its
three beats (``page_beat``: the page's promote, recover, claim, handle, settle;
``lane_beat``: a Pool consumer's pipelined beat; ``batch_beat``: its batch
beat), ``beat`` (what a beat did and what it reads of its consumer),
``handler`` (a handler's answer and ``Error``), ``legs`` (the recovery legs,
what a lost link does), ``budget`` (a run's ``Budget`` and each consumer's
``Share`` of it), ``report`` (``RunReport``), ``ticker`` (the one tick loop),
``metronome``, ``pool`` and ``pools``. Import them from here:
``from echomq_teach.consumer import Consumer, Error, Pool``.
"""

from __future__ import annotations

from .beat import Beat
from .budget import Budget, Share
from .consumer import Consumer
from .handler import Error, Handler, run_handler, settle_args
from .legs import LOST_LINK, RECOVERY_LEGS
from .metronome import Metronome
from .pool import Pool
from .pools import Pools
from .report import RunReport
from .ticker import Ticker

__all__ = [
    "LOST_LINK",
    "RECOVERY_LEGS",
    "Beat",
    "Budget",
    "Consumer",
    "Error",
    "Handler",
    "Metronome",
    "Pool",
    "Pools",
    "RunReport",
    "Share",
    "Ticker",
    "run_handler",
    "settle_args",
]
