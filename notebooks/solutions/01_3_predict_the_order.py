# ZPOPMIN with every score 0 takes the smallest member, compared byte by byte.
# "A-rush" < "JOB…" (A before J); the producer whose clock is 5 s behind minted the smallest
# JOB id although it enqueued last; the reaped job went back with its old, early id;
# then this process's two mints in order; "zz-late" (lowercase) after every JOB id.
predict_the_order = [
    "custom id A-rush",
    "another producer, clock 5 s behind, enqueued last",
    "reaped back to pending, minted before all",
    "this process, first",
    "this process, second",
    "custom id zz-late",
]
