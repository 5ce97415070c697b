def pass_the_nemesis(conn, queue):
    def charge_once_per_order(job, ctx):
        # the provider may time out; raising lets the queue try the job again. The idempotency key is the
        # ORDER (the payload names it), which every run of the job shares (a retry's, a zombie's) and so does
        # the second job of an order sent twice: the provider charges each order once. The job's id would tell
        # the two jobs of one order apart, and charge that customer twice.
        ctx.work()
        ctx.charge(job, key=job.payload)
        return f"charged {job.payload}"

    # 60 ms of work: a 1 s lease is never outlived by a healthy handler, even on a loaded machine, and a killed
    # worker's job is back within about a second. Five attempts: the nemesis's three faults and one provider
    # timeout can take four of a job's runs at most, so the fifth is always there
    return {"lease_ms": 1_000, "max_attempts": 5, "handler": charge_once_per_order}
