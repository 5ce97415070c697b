def predict_the_crashes():
    # charge_first charges, then works. Killed right after its claim: nothing ran, nothing charged; the
    # healthy worker runs it once. Killed inside the work or after the handler: the charge was made and
    # the job runs again elsewhere, charging again. Killed after the settle reached the node: settled,
    # never run again.
    return {
        "claimed": {"handler runs": 1, "charges": 1},
        "handler": {"handler runs": 2, "charges": 2},
        "handled": {"handler runs": 2, "charges": 2},
        "settle-sent": {"handler runs": 1, "charges": 1},
    }
