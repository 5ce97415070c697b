"""beat.py · your consumer's beat, then fast (stage 10.4): the sweeps only when they can find something."""

#: beats between two sweeps while claims keep bringing jobs
SWEEP_EVERY = 8
_since = {"beats": SWEEP_EVERY}


def beat(queue, handle, budget):
    # a busy worker sweeps every SWEEP_EVERY beats, an idle one every beat: the sweeps are two round trips
    # that find nothing on most beats of a busy pool, and a lapsed lease still comes back within a few beats
    _since["beats"] += 1
    if _since["beats"] >= SWEEP_EVERY:
        queue.promote()
        queue.recover()
        _since["beats"] = 0
    if not budget.take():
        return None
    job = queue.claim()
    if job is None:
        budget.give_back()
        _since["beats"] = SWEEP_EVERY  # idle: sweep on the next beat
        return None
    ok, value = handle(job)
    return queue.complete(job, value) if ok else queue.retry(job, value)
