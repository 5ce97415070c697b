def predict_the_failover():
    # Without WAIT the primary answers the burst's 20 enqueues at once, and its held-back replica never applies
    # them: after the promotion they are gone although the producer was told they were stored (or a worker got
    # to one and its settle is what is gone): invalid. With WAIT 1 2000 the first write of the window waits for
    # the replica, which applies nothing; the kill cuts the link before 2 s pass: no enqueue of the window is
    # answered, nothing answered is lost: valid.
    return {
        "no WAIT: verdict": "invalid",
        "no WAIT: burst enqueues answered": 20,
        "WAIT 1 2000: verdict": "valid",
        "WAIT 1 2000: burst enqueues answered": 0,
    }
