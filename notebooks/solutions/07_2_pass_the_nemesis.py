def pass_the_nemesis(conn, queue):
    def charge_once(job, ctx):
        # the same work and the same provider, but the charge is keyed by the job: a second run of this
        # job (a zombie's, a retry's) finds it made and makes no other
        ctx.work()
        ctx.effect_once(job)
        if job.payload.endswith("!") and job.attempts == 1:
            raise RuntimeError("the payment provider timed out (after it took the money)")
        return f"charged {job.id}"

    # 60 ms of work: a 1 s lease is never outlived by a healthy handler, and a killed worker's job is
    # back within about a second; two attempts let a job marked '!' fail once and then complete
    return {"lease_ms": 1_000, "max_attempts": 3, "handler": charge_once}
