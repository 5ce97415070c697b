# a: the retry parks it in schedule, the promote brings it back to pending, the crashed claim (token 2) is
# reaped back to pending, the third claim (token 3) completes it: its row is gone, and the counter goes
# 2 -> 1. b dies at its cap under "ignore", which counts as done: 1 -> 0, and the parent is released.
trace_a_flow_child = {
    "where a is after each step": ["schedule", "pending", "pending", "nowhere", "nowhere"],
    ":dependencies after each step": [2, 2, 2, 1, 0],
    "a's token when it completed": 3,
    "the parent at the end": "pending",
}
