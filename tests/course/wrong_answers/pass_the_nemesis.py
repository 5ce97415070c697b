"""Wrong answers to 07.2 (pass the nemesis), each with the finding that must name why."""


def never_raises(conn, queue):
    # the loophole of the old capstone: a handler that never fails, with one attempt. The provider's timeout
    # is swallowed and the order completed, whether the money was taken or not
    def swallow(job, ctx):
        ctx.work()
        try:
            ctx.charge(job, key=job.id)
        except Exception:
            pass
        return f"charged {job.id}"

    return {"lease_ms": 1_000, "max_attempts": 1, "handler": swallow}


def not_idempotent(conn, queue):
    # retried, enough attempts, a sound lease: but every call charges, so a retry after a timeout that
    # took the money (and a zombie's rerun) charges the customer again
    def charge(job, ctx):
        ctx.work()
        ctx.charge(job)
        return f"charged {job.id}"

    return {"lease_ms": 1_000, "max_attempts": 3, "handler": charge}


def one_attempt(conn, queue):
    # the right handler, the team's max_attempts: an order the provider timed out on has no second try
    def charge_once(job, ctx):
        ctx.work()
        ctx.charge(job, key=job.id)
        return f"charged {job.id}"

    return {"lease_ms": 1_000, "max_attempts": 1, "handler": charge_once}
