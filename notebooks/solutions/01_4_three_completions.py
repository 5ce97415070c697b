from echomq_teach import jobs


def three_completions():
    # the fence compares the token with the row's attempts; the right completion deletes the row, so
    # nothing is left for the same completion sent again: it is stale, and the job is counted once
    return {
        "a token nobody was given": jobs.STALE,
        "the token the claim answered": jobs.OK,
        "the same completion again": jobs.STALE,
        "completed count": 1,
    }
