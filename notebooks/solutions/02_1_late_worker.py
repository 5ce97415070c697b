from echomq_teach import jobs


def late_worker():
    # @complete compares the token with attempts AND wants state active; it never reads the clock.
    return {
        "lease lapsed, no sweep yet: the first worker completes": jobs.OK,
        "lease lapsed, a reap ran: the first worker completes": jobs.STALE,
        "reaped and claimed again: the first worker completes": jobs.STALE,
        "reaped and claimed again: the second worker completes": jobs.OK,
    }
