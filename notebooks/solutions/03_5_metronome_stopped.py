from echomq_teach import jobs, snapshots, stalled


def metronome_stopped(conn, queue):
    # what one tick of this pool's metronome does: promote what is due, then its recovery leg. The pool's settings
    # are in what its metronome did before it stopped: a counted sweep leaves a stall count in the rows it takes
    # back, and buries a job when the count goes over max_stalled (so a job it buried counts max_stalled + 1);
    # a reap counts nothing.
    s = snapshots.snapshot(conn, queue)
    counted = [row for row in s.rows.values() if "stalled" in row]
    buried = [int(s.rows[i]["stalled"]) for i in s.dead if s.rows[i].get("last_error") == "stalled"]
    jobs.promote(conn, queue)
    if counted:
        stalled.check(conn, queue, max_stalled=max(buried) - 1)
    else:
        jobs.reap(conn, queue)
