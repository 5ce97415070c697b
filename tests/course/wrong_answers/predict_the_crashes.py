"""Wrong predictions of 07.1 (predict the crash points), each with the finding that must name why."""

#: the table of handlers.charge above, each pair read as its first crash alone: as if charging first, and a
#: second crash, changed nothing
AS_CHARGE = {
    "claimed, then claimed": {"handler runs": 1, "charges": 1, "settled with token": 2},
    "handler, then handled": {"handler runs": 2, "charges": 1, "settled with token": 2},
    "handled, then settle-sent": {"handler runs": 2, "charges": 2, "settled with token": 2},
    "claimed, then handler": {"handler runs": 1, "charges": 1, "settled with token": 2},
}
#: "the worker never heard the settle's answer, so the job runs again": the node settled it all the same
UNSEEN_SETTLE_RUNS_AGAIN = {
    "claimed, then claimed": {"handler runs": 1, "charges": 1, "settled with token": 3},
    "handler, then handled": {"handler runs": 3, "charges": 3, "settled with token": 3},
    "handled, then settle-sent": {"handler runs": 3, "charges": 3, "settled with token": 3},
    "claimed, then handler": {"handler runs": 2, "charges": 2, "settled with token": 3},
}
