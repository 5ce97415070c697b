# charge_first charges, then works. Killed at "claimed": nothing ran, nothing charged. Killed inside the
# handler or after it: the charge was made and the settle never reached the node, so the job runs again
# and charges again. Killed at "settle-sent": the settle reached the node; the job is settled, never run
# again. Every claim raises the token: the settle carries the number of the claim that made it.
predict_the_crashes = {
    "claimed, then claimed": {"handler runs": 1, "charges": 1, "settled with token": 3},
    "handler, then handled": {"handler runs": 3, "charges": 3, "settled with token": 3},
    "handled, then settle-sent": {"handler runs": 2, "charges": 2, "settled with token": 2},
    "claimed, then handler": {"handler runs": 2, "charges": 2, "settled with token": 3},
}
