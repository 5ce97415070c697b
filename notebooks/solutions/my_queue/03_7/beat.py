"""beat.py · your consumer's beat (stage 03.7): what each of your workers does, again and again."""


def beat(queue, handle, budget):
    # the sweeps first, every beat: a retry whose delay passed comes back, a lapsed lease is recovered
    # (or buried at its cap), whatever this worker's budget says
    queue.promote()
    queue.recover()
    # a claim only with budget left; a claim that brings nothing gives its share back
    if not budget.take():
        return None
    job = queue.claim()
    if job is None:
        budget.give_back()
        return None
    ok, value = handle(job)
    return queue.complete(job, value) if ok else queue.retry(job, value)
