# The fence reads no clock: a's lapsed lease, never swept, still passes, and its ZREM takes a out of active:
# 4 -> 3. The reap made b's row pending: its old worker is stale, nothing counted. b dies under wait: nothing;
# c under remove and d under ignore count as done (3 -> 2 -> 1); only ignore records it in :unsuccessful.
# The reprocessed b completes: 0, and the parent is released to pending.
predict_the_counter = {
    "dependencies after each step": [3, 3, 3, 2, 1, 0],
    "the parent's state at the end": "pending",
    "entries in the parent's :unsuccessful at the end": 1,
}
