# flows.add checks its arguments on the host before anything is sent (BadInput, whatever the ids), and
# @enqueue_flow refuses an id that has a row (DuplicateJob, nothing written): a dead job keeps its row, a
# waiting parent has one in no set, a completed job's row is gone. Left: the dead job, the waiting flow's
# three rows and the landed flow's three
refused_lands = {
    "a dead job's id, with a policy list one short": "BadInput",
    "a child's id is a completed job's": "landed",
    "a child's id is a waiting parent's": "DuplicateJob",
    "jobs in the queue after the three": 7,
}
