"""Wrong predictions of 09.1 (predict the failover), each with the finding that must name why."""


def replication_is_synchronous():
    # "the replica has whatever the primary answered": nothing lost either way, every enqueue answered
    return {"no WAIT: verdict": "valid", "no WAIT: burst enqueues answered": 20,
            "WAIT 1 2000: verdict": "valid", "WAIT 1 2000: burst enqueues answered": 20}


def wait_answers_late():
    # "WAIT only delays the answer": both told stored after the wait, both lose the window
    return {"no WAIT: verdict": "invalid", "no WAIT: burst enqueues answered": 20,
            "WAIT 1 2000: verdict": "invalid", "WAIT 1 2000: burst enqueues answered": 20}
