def predict_the_sweep():
    # max_stalled = 2: counts 1 and 2 go back to pending; count 3 is over the cap, so the job is buried.
    return {"where after each round": ["pending", "pending", "dead"], "stalled count at the end": 3}
