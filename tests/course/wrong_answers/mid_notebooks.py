"""Plausible wrong answers to the exercises of notebooks 04–06 (05.2's Lua ones are in fan_in.py)."""

from echomq_teach import keyspace, snapshots


# -- 04.2 · what the native sweep will do ------------------------------------------------------------------
def sweep_reads_no_epoch(s_conn, n_conn, queue):
    # the exemption forgotten: every lapsed lease counted as in 03, whoever granted it
    s = snapshots.snapshot(n_conn, queue)
    return {i: "left alone" if s.relative("active", i) >= 0
            else "buried" if int(s.rows[i].get("stalled", 0)) + 1 > 1 else "put back counted" for i in s.active}


def sweep_reads_no_clock(s_conn, n_conn, queue):
    # every lease from before the restart taken for lapsed, its deadline unread
    run_id = n_conn.client.info("server")["run_id"]
    s = snapshots.snapshot(n_conn, queue)
    out = {}
    for i in s.active:
        row = s.rows[i]
        if row.get("lease_epoch") != run_id:
            out[i] = "put back uncounted"
        elif s.relative("active", i) >= 0:
            out[i] = "left alone"
        else:
            out[i] = "buried" if int(row.get("stalled", 0)) + 1 > 1 else "put back counted"
    return out


# -- 04.3 · which wire does each node take? ----------------------------------------------------------------
def wire_by_brand_alone(s_conn, n_conn, queue, nodes):
    # the brand read as the whole story: the module never asked about, an unbranded node taken for nobody's
    said = {keyspace.BRAND_WIRE4: "wire 4", keyspace.BRAND_WIRE6: "wire 6"}
    return [said.get(node.client().get(keyspace.VERSION_KEY), "neither") for node in nodes]


def wire_by_trying_connectors(s_conn, n_conn, queue, nodes):
    # the right answers, found by trying: the wire 4 connector brands the node that had no brand
    from echomq_teach import WireError

    answers = []
    for node in nodes:
        for wire in (4, 6):
            try:
                node.connector(wire=wire).close()
            except WireError:
                continue
            answers.append(f"wire {wire}")
            break
        else:
            answers.append("neither")
    return answers


def wire_by_module_alone(s_conn, n_conn, queue, nodes):
    # the module read as the whole story: a node with trafikey taken for a wire 6 node, whatever its brand
    def module(node):
        return any(m["name"] == "trafikey" for m in node.client().execute_command("MODULE", "LIST"))

    return ["wire 6" if module(node) else "wire 4" for node in nodes]


# -- 04.1 · where the two part ways --------------------------------------------------------------------------
PART_WAYS_ALIKE = {
    # "one transition, two executors" read as "no difference at all"
    "a paused queue, a ghost at its head: the raw claim answers": ("empty", "empty"),
    "after that claim, the ghost is": ("nowhere", "nowhere"),
    "a lease of 'soon', a ghost at its head: the raw claim answers": ("error", "error"),
    "a lease of 'soon' on a paused queue: its one job is then": ("pending", "pending"),
}
PART_WAYS_COMMAND_POPS_FIRST = {
    # the command taken to pop the head before its checks, as the script does
    "a paused queue, a ghost at its head: the raw claim answers": ("empty", "empty"),
    "after that claim, the ghost is": ("nowhere", "nowhere"),
    "a lease of 'soon', a ghost at its head: the raw claim answers": ("empty", "empty"),
    "a lease of 'soon' on a paused queue: its one job is then": ("nowhere", "pending"),
}
PART_WAYS_SCRIPT_READS_THE_FLAG = {
    # the pause flag taken to stop the script too, before its pop
    "a paused queue, a ghost at its head: the raw claim answers": ("empty", "empty"),
    "after that claim, the ghost is": ("pending", "pending"),
    "a lease of 'soon', a ghost at its head: the raw claim answers": ("empty", "error"),
    "a lease of 'soon' on a paused queue: its one job is then": ("pending", "pending"),
}


# -- 05.1 · which lands are refused ------------------------------------------------------------------------------
# "already exists" read as "was ever a job": the completed job's id refused too
REFUSED_LANDS_EVERY_ID_SEEN = {"a dead job's id, with a policy list one short": "DuplicateJob",
                               "a child's id is a completed job's": "DuplicateJob",
                               "a child's id is a waiting parent's": "DuplicateJob",
                               "jobs in the queue after the three": 4}
# the existence read from the sets: a waiting parent, in no set, taken for a free id
REFUSED_LANDS_BY_THE_SETS = {"a dead job's id, with a policy list one short": "BadInput",
                             "a child's id is a completed job's": "landed",
                             "a child's id is a waiting parent's": "landed",
                             "jobs in the queue after the three": 10}


# -- 05.3 · why do these parents never release? -------------------------------------------------------------
def take_every_child(conn, queue, parents):
    # every child with a parent completed with the token its row shows: the running one taken from its worker
    from echomq_teach import jobs

    s = snapshots.snapshot(conn, queue)
    held = {}
    for child, row in s.rows.items():
        if row.get("parent") in parents:
            if child in s.dead:
                jobs.reprocess(conn, queue, child)
                c = jobs.claim(conn, queue, 30_000)
                jobs.complete(conn, queue, c.id, c.attempts, "done")
            elif child in s.schedule:
                jobs.promote(conn, queue)
                c = jobs.claim(conn, queue, 30_000)
                jobs.complete(conn, queue, c.id, c.attempts, "done")
            else:
                jobs.complete(conn, queue, child, int(row["attempts"]), "done")
            held[row["parent"]] = child
    return held


def force_the_parents(conn, queue, parents):
    # each parent pushed to pending by hand: its counter and :processed still say a child is missing
    from echomq_teach import flows

    held = {}
    s = snapshots.snapshot(conn, queue)
    for parent in parents:
        child = next((i for i, r in s.rows.items() if r.get("parent") == parent), None)
        if flows.dependencies(conn, queue, parent) and child is not None:
            conn.call("ZADD", keyspace.queue_key(queue, "pending"), 0, parent)
            conn.call("HSET", keyspace.job_key(queue, parent), "state", "pending")
            held[parent] = child
    return held


# -- 05.4 · predict the counter -------------------------------------------------------------------------------
COUNTER_COUNTS_EVERY_CALL = {
    # every completion taken to count, the late worker's after the reap too
    "dependencies after each step": [3, 2, 2, 1, 0, 0],
    "the parent's state at the end": "pending",
    "entries in the parent's :unsuccessful at the end": 1,
}
COUNTER_REMOVE_RECORDS_TOO = {
    # remove taken to record the failure as ignore does
    "dependencies after each step": [3, 3, 3, 2, 1, 0],
    "the parent's state at the end": "pending",
    "entries in the parent's :unsuccessful at the end": 2,
}


# -- 06.1 · trace a flow child --------------------------------------------------------------------------------
# the reap taken to give back the attempt the dead worker spent
TRACE_TOKEN_GIVEN_BACK = {"where a is after each step": ["schedule", "pending", "pending", "nowhere", "nowhere"],
                          ":dependencies after each step": [2, 2, 2, 1, 0], "a's token when it completed": 2,
                          "the parent at the end": "pending"}
# b's death taken to count for nothing, so the parent waits on
TRACE_DEATH_COUNTS_NOTHING = {"where a is after each step": ["schedule", "pending", "pending", "nowhere", "nowhere"],
                              ":dependencies after each step": [2, 2, 2, 1, 1], "a's token when it completed": 3,
                              "the parent at the end": "awaiting_children"}
