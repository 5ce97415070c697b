"""Wrong answers to 10.1, 10.2 and 10.3 (notebook 10's diagnose exercises), two each."""


# -- 10.1 · which jobs run twice --------------------------------------------------------------------------
def delivered_twice_only(conn, queue, held):
    # sees the redeliveries, misses the restored jobs still waiting on the list for their second run
    counts = conn.call("HGETALL", f"case:{{{queue}}}:deliveries")
    return {job for job in held if int(counts.get(job, 0)) >= 2}


def still_unacked(conn, queue, held):
    # takes "still in unacked" for "at risk": names w0's fresh jobs, and the one w1 holds now
    return {job for job in held if conn.call("HEXISTS", f"case:{{{queue}}}:unacked", job)}


# -- 10.2 · find the orphans ------------------------------------------------------------------------------
def every_working_list(conn, queue):
    # every process's list, the live one's too: work in progress is not stranded
    base = f"case:{{{queue}}}:"
    out = set()
    for process in conn.call("SMEMBERS", base + "processes"):
        out |= {e.partition("|")[0] for e in conn.call("LRANGE", base + f"working:{process}", 0, -1)}
    return out


def heartbeat_read_backwards(conn, queue):
    # reads the heartbeat the wrong way round: the live process's jobs, none of the dead one's
    base = f"case:{{{queue}}}:"
    out = set()
    for process in conn.call("SMEMBERS", base + "processes"):
        if conn.call("EXISTS", base + f"heartbeat:{process}"):
            out |= {e.partition("|")[0] for e in conn.call("LRANGE", base + f"working:{process}", 0, -1)}
    return out


# -- 10.3 · released too soon -----------------------------------------------------------------------------
def every_released_parent(conn, queue, parents):
    # every parent on wait: the ones let go when their last child ended were released on time
    return {p for p in parents if p in set(conn.call("LRANGE", f"case:{{{queue}}}:wait", 0, -1))}


def pending_counter_only(conn, queue, parents):
    # a counter above zero names a parent still waiting for its children too, not released at all
    return {p for p in parents if int(conn.call("GET", f"case:{{{queue}}}:pending:{p}") or 0) > 0}


#: each wrong answer, its exercise, and what its verdict must say
WRONG = {
    "delivered twice only": ("10.1", delivered_twice_only, ("of the ids that the restore put back",)),
    "still unacked": ("10.1", still_unacked, ("of the ids you named were never put back",)),
    "every working list": ("10.2", every_working_list, ("of the ids you named are not stranded",)),
    "heartbeat backwards": ("10.2", heartbeat_read_backwards, ("of the ids you named are not stranded",
                                                               "of the ids held by a dead process are missing")),
    "every released parent": ("10.3", every_released_parent, ("of the ids you named were released when",)),
    "pending counter only": ("10.3", pending_counter_only, ("of the ids you named were released when",)),
}
