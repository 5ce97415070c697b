# While the replica is held it receives the primary's writes and applies none. WAIT 1 100 times out: each write
# of the window is answered short, by the primary alone. WAIT 1 2000 holds its writes until the hold ends and
# the replica confirms them. Either way the whole burst is answered. And the replica applies everything it
# received once the hold ends, before the kill: the new primary lacks nothing anyone was told, so both are
# valid. A short WAIT confirms nothing; it loses a write only if the replica never applies it before taking over.
predict_the_failover = {
    "WAIT 1 100: verdict": "valid",
    "WAIT 1 100: burst enqueues answered": 20,
    "WAIT 1 100: writes answered short": "some",
    "WAIT 1 2000: verdict": "valid",
    "WAIT 1 2000: burst enqueues answered": 20,
}
