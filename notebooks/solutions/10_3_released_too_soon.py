def released_too_soon(conn, queue, parents):
    base = f"case:{{{queue}}}:"
    on_wait = set(conn.call("LRANGE", base + "wait", 0, -1))
    return {p for p in parents if p in on_wait and int(conn.call("GET", base + f"pending:{p}") or 0) > 0}
