"""Wrong predictions of 07.1 (predict the crash points), each with the finding that must name why."""


def as_charge():
    # the table of handlers.charge, copied: as if charging first changed nothing
    return {
        "claimed": {"handler runs": 1, "charges": 1},
        "handler": {"handler runs": 2, "charges": 1},
        "handled": {"handler runs": 2, "charges": 2},
        "settle-sent": {"handler runs": 1, "charges": 1},
    }


def unseen_settle_runs_again():
    # "the worker never heard the settle's answer, so the job runs again": the node settled it all the same
    return {
        "claimed": {"handler runs": 1, "charges": 1},
        "handler": {"handler runs": 2, "charges": 2},
        "handled": {"handler runs": 2, "charges": 2},
        "settle-sent": {"handler runs": 2, "charges": 2},
    }
