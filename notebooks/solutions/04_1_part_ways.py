# (scripted @claim2 sent raw, native EMQ.CLAIM) — each executor's steps in order, to the first that answers:
# @claim2 reads no pause flag and checks no argument: it pops the head, and a ghost ends it at once (empty,
# the ghost consumed) before 'soon' is ever used; with a real job it writes the token and state, then fails on
# 'soon' with the job in no set. EMQ.CLAIM checks the lease first (an error, nothing touched), then the pause
# flag (empty, the ghost left in pending), then the head.
part_ways = {
    "a paused queue, a ghost at its head: the raw claim answers": ("empty", "empty"),
    "after that claim, the ghost is": ("nowhere", "pending"),
    "a lease of 'soon', a ghost at its head: the raw claim answers": ("empty", "error"),
    "a lease of 'soon' on a paused queue: its one job is then": ("nowhere", "pending"),
}
