# A lapsed lease moves nothing by itself: the job stays in active until a sweep, so B's first claim
# finds pending empty. @complete compares the token with the row's attempts AND wants the row active;
# it never reads the clock. After the reap the row is pending: A's token is still the row's own, and A
# is refused all the same (writing nothing), so B's claim raises attempts to 2. Then A's 1 is behind;
# B's 2 is the row's own, its row still active (no sweep since its lease lapsed).
late_worker = {
    "B's claim, while A's lapsed lease is not swept": "nothing",
    "A completes, after a reap and before anyone claims again": "stale",
    "B's token, when it claims after that": 2,
    "A completes, after B's lease lapsed too (no sweep since)": "stale",
    "B completes, after A's try (no sweep since)": "ok",
}
