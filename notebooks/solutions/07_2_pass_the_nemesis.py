def pass_the_nemesis(conn, queue):
    def charge_once(job, ctx):
        # the provider may time out; raising lets the queue try the order again. The idempotency key is the
        # order's own id, shared by every run of it (a retry's, a zombie's): the provider charges it once
        ctx.work()
        ctx.charge(job, key=job.id)
        return f"charged {job.id}"

    # 60 ms of work: a 1 s lease is never outlived by a healthy handler, and a killed worker's order is
    # back within about a second; three attempts let an order the provider timed out on be tried again
    return {"lease_ms": 1_000, "max_attempts": 3, "handler": charge_once}
