def predict_the_counter():
    # a: 3 → 2; the redelivery is stale (row gone); b's late worker is stale (new token);
    # b's second worker: 2 → 1; c dies under ignore, which counts as done: 1 → 0, the parent is released.
    return {"dependencies after each step": [2, 2, 2, 1, 0], "the parent's state at the end": "pending"}
