from echomq_teach import jobs, stalled


def metronome_stopped(conn, queue):
    # what the pool's metronome does on each tick: promote what is due, then its recovery leg, which for these
    # consumers is the counted sweep (recovery="stalled", max_stalled=2). A due retry comes back; a lapse is
    # counted, and the job that has now stalled three times is buried; a live lease and a retry not yet due
    # are left where they are.
    jobs.promote(conn, queue)
    stalled.check(conn, queue, max_stalled=2)
