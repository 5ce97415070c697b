"""Wrong predictions of 09.1 (predict the failover), each with the finding that must name why."""

#: docs/cluster.md's held rows read across: a WAIT shorter than the window loses the burst, a long one answers
#: none of it. There the hold outlasts the kill; here it ends first
AS_THE_HELD_ROWS = {"WAIT 1 100: verdict": "invalid", "WAIT 1 100: burst enqueues answered": 20,
                    "WAIT 1 100: writes answered short": "some",
                    "WAIT 1 2000: verdict": "valid", "WAIT 1 2000: burst enqueues answered": 0}
#: "a short WAIT is an unknown outcome": its caller taken to hear nothing
SHORT_IS_UNANSWERED = {"WAIT 1 100: verdict": "valid", "WAIT 1 100: burst enqueues answered": 0,
                       "WAIT 1 100: writes answered short": "none",
                       "WAIT 1 2000: verdict": "valid", "WAIT 1 2000: burst enqueues answered": 20}
