"""Wrong answers to 08.1 (predict the crash) and 08.3 (find what was lost), each with the finding that must name why."""


# 08.1: "the next driver folds again what it finds in the stream": it trims to its cursor first
FOLDS_AGAIN = {"stream, when the second driver is killed": 5, "floor, when the second driver is killed": 30,
               "floor, once the third driver is done": 45}
# 08.1: "the rows were written, so they are on the floor": a write inside a transaction never committed is not
WRITE_TAKEN_FOR_COMMIT = {"stream, when the second driver is killed": 5, "floor, when the second driver is killed": 35,
                          "floor, once the third driver is done": 35}


def stream_only(conn, queue, floor_path, settled):
    # 08.3: reads the stream alone: every settle already on the floor is taken for lost
    from echomq_teach import floor

    still = {f["id"] for _, f in conn.call("XRANGE", floor.completions_stream(queue), "-", "+")}
    return set(settled) - still


def floor_only(conn, queue, floor_path, settled):
    # 08.3: reads the floor alone: the settles still waiting in the stream are taken for lost
    from echomq_teach import floor

    with floor.open_floor(floor_path, readonly=True) as f:
        archived = {s.job_id for s in f.settles(floor.completions_stream(queue))}
    return set(settled) - archived


def the_last_five(conn, queue, floor_path, settled):
    # 08.3: "MAXLEN took the ones it names": but it kept the newest and took those before them
    from echomq_teach import floor

    return {f["id"] for _, f in conn.call("XRANGE", floor.completions_stream(queue), "-", "+")}
