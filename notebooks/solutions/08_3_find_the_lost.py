from echomq_teach import floor


def find_the_lost(conn, queue, floor_path, settled):
    stream = floor.completions_stream(queue)
    with floor.open_floor(floor_path, readonly=True) as f:
        archived = {s.job_id for s in f.settles(stream)}
    still_in_stream = {fields["id"] for _, fields in conn.call("XRANGE", stream, "-", "+")}
    return set(settled) - archived - still_in_stream
