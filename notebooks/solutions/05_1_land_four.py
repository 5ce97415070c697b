from echomq_teach import flows


def land_four(conn, queue):
    return flows.add(conn, queue, "assemble", ["part 1", "part 2", "part 3", "part 4"])
