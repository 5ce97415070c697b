# flows.add checks its arguments on the host (BadInput) and the script checks every id before
# its first write (DuplicateJob): a refused land writes nothing, so only the job already there is left
refused_lands = {
    "two children share an id": "BadInput",
    "a child's id is already a job's": "DuplicateJob",
    "a policy list one short": "BadInput",
    "jobs in the queue after the three": 1,
}
