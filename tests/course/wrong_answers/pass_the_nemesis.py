"""Wrong answers to 07.2 (pass the nemesis), each with the finding that must name why; and the copy attempts: the
team's settings as notebook 07 shows them, the one edit its printed handler invites (the job's id as the key), and
the settings and handler of the notebook's own runs."""


def never_raises(conn, queue):
    # the loophole of the old capstone: a handler that never fails, with one attempt. The provider's timeout
    # is swallowed and the order completed, whether the money was taken or not
    def swallow(job, ctx):
        ctx.work()
        try:
            ctx.charge(job, key=job.payload)
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

    return {"lease_ms": 1_000, "max_attempts": 5, "handler": charge}


def one_attempt(conn, queue):
    # the right handler, the team's max_attempts: an order the provider timed out on has no second try
    def charge_once_per_order(job, ctx):
        ctx.work()
        ctx.charge(job, key=job.payload)
        return f"charged {job.id}"

    return {"lease_ms": 1_000, "max_attempts": 1, "handler": charge_once_per_order}


def lease_under_the_work(conn, queue):
    # the right handler and attempts, the team's 50 ms lease: every healthy handler (60 ms of work) outlives it
    def charge_once_per_order(job, ctx):
        ctx.work()
        ctx.charge(job, key=job.payload)
        return f"charged {job.id}"

    return {"lease_ms": 50, "max_attempts": 10, "handler": charge_once_per_order}


# -- copy attempts ---------------------------------------------------------------------------------------------
def the_teams_settings(conn, queue):
    # what the notebook says the team runs, as it is
    return {"lease_ms": 50, "max_attempts": 1, "handler": "echomq_teach.lab.handlers:careless_charge"}


def keyed_by_the_job(conn, queue):
    # the printed handler with the one edit 07 taught for the zombie (key the effect by the job's id), and sound
    # settings: the two jobs of an order sent twice have two ids, so that customer is charged twice
    def careless_charge(job, ctx):
        ctx.work()
        ctx.charge(job, key=job.id)
        return f"charged {job.id}"

    return {"lease_ms": 1_000, "max_attempts": 5, "handler": careless_charge}


def the_notebooks_runs(conn, queue):
    # the settings of 07's nemesis run (a 500 ms lease) and the idempotent handler it printed: charge_once keeps
    # its own record, and never asks the provider at all
    return {"lease_ms": 500, "max_attempts": 5, "handler": "echomq_teach.lab.handlers:charge_once"}


# -- lazy routes past the lease (attack b, and ours) -----------------------------------------------------------
def skips_the_work(conn, queue):
    # attack b's pass: the team's 50 ms lease kept, the 60 ms of work skipped: a handler that returns in a
    # millisecond never outlives its lease, and every order is settled with its work never done
    def h(job, ctx):
        ctx.charge(job, key=job.payload)
        return "ok"

    return {"lease_ms": 50, "max_attempts": 3, "handler": h}


def work_made_instant(conn, queue):
    # the work "done" in no time: the context's work time set to 0 before the call, the team's lease kept
    def h(job, ctx):
        ctx.work_ms = 0
        ctx.work()
        ctx.charge(job, key=job.payload)
        return "ok"

    return {"lease_ms": 50, "max_attempts": 5, "handler": h}


def work_left_running(conn, queue):
    # the work started off the handler's run (a thread of its own) and the order settled at once: the completion
    # goes before the work is done, under the team's lease
    def h(job, ctx):
        import threading

        threading.Thread(target=ctx.work, daemon=True).start()
        ctx.charge(job, key=job.payload)
        return "ok"

    return {"lease_ms": 50, "max_attempts": 5, "handler": h}


def work_noted_not_done(conn, queue):
    # the record of the work written by the handler itself (what ctx.work notes when done), the work skipped, the
    # team's lease kept: noted at once after the run began, it stands for no work
    def h(job, ctx):
        ctx.rec.note("worked", job=job.id, token=job.attempts, ms=60)
        ctx.charge(job, key=job.payload)
        return "ok"

    return {"lease_ms": 50, "max_attempts": 5, "handler": h}
