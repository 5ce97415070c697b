# max_stalled = 2. Round 1's sweep counts 1; round 2's reap forgives its lapse; round 3 is a retry, no lapse;
# round 4's sweep counts 2 (not over the cap: back to pending); round 5's counts 3, over the cap: buried.
predict_the_sweep = {
    "where after each round": ["pending", "pending", "pending", "pending", "dead"],
    "stalled count at the end": 3,
}
