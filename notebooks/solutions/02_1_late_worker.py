# A lapsed lease moves nothing by itself: the job stays in active until a sweep, so B's first claim
# finds pending empty. The reap puts it back; B's claim raises attempts to 2. @complete compares the
# token with the row's attempts AND wants the row active; it never reads the clock: A's 1 is behind,
# B's 2 is the row's own, its row still active (no sweep since its lease lapsed).
late_worker = {
    "B's claim, while A's lapsed lease is not swept": "nothing",
    "B's token, when it claims after the reap": 2,
    "A completes, after B's lease lapsed too (no sweep since)": "stale",
    "B completes, after A's try (no sweep since)": "ok",
}
