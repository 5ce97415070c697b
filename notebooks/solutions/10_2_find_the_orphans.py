def find_the_orphans(conn, queue):
    base = f"case:{{{queue}}}:"
    stranded = set()
    for process in conn.call("SMEMBERS", base + "processes"):
        # a live process beats: its list is work in progress; a dead one's waits for a start
        if not conn.call("EXISTS", base + f"heartbeat:{process}"):
            for entry in conn.call("LRANGE", base + f"working:{process}", 0, -1):
                stranded.add(entry.partition("|")[0])
    return stranded
