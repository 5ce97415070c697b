"""beat.py · your consumer's beat (stage 03.7): what each of your workers does, again and again.

A worker process imports this file and calls ``beat(queue, handle, budget)`` in a loop, pausing a
moment after a beat that answered None. What it must do: notebook 03, "Your queue, stage 4".

- ``queue``: your queue's calls, each one real call through your scripts, recorded for the checker:
  ``queue.promote()``, ``queue.recover()``, ``queue.claim()`` (a job, or None),
  ``queue.complete(job, result)`` and ``queue.retry(job, reason)`` (each answers the outcome);
- ``handle(job)``: runs the handler on a claimed job; answers ``(True, result)`` or ``(False, reason)``;
- ``budget``: how many jobs this worker may still claim: ``budget.take()`` answers 1 (one taken) or
  0 (none left), ``budget.give_back()`` returns one.

Answer the settle's outcome, or None when the beat claimed nothing.
"""


def beat(queue, handle, budget):
    raise NotImplementedError("beat.py is not written yet")
