def which_run_twice(conn, queue, held):
    base = f"case:{{{queue}}}:"
    # back on the list: restored, waiting for its second run
    waiting = {m.partition("|")[0] for m in conn.call("LRANGE", base + "queue", 0, -1)}
    # handed out again already: a second delivery counted
    counts = conn.call("HGETALL", base + "deliveries")
    delivered_again = {job for job, n in counts.items() if int(n) >= 2}
    return {job for job in held if job in waiting or job in delivered_again}
