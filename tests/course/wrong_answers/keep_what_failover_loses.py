"""Wrong answers to 09.2 (a design for a short WAIT), each with the finding that must name why; and the copy
attempts: what the kit does with no design (notebook 09 counts short WAITs and answers all the same), and
notebook 09's "wait as long as it takes" (WAIT 1 0) made a design."""


def resends_everything():
    # "send it again until it sticks", once, for every write: a claim sent again hands out a second job
    def on_short_wait(short):
        from echomq_teach.cluster_connector import Unconfirmed

        if short.again().acked >= short.asked:
            return short.reply
        raise Unconfirmed(f"{short.command}: not confirmed")

    return on_short_wait


def raises_its_own_error():
    # the caller is not told "stored", but by an error no caller reads as an unknown outcome
    def on_short_wait(short):
        raise RuntimeError(f"{short.command} was not confirmed")

    return on_short_wait


def a_setting():
    # the old answer: a WAIT setting, not a design
    return {"wait": (1, 2000)}


# -- copy attempts ---------------------------------------------------------------------------------------------
def as_the_kit_answers():
    # what the kit does with no design, as notebook 09 shows it (conn.wait_short counts, the reply stands)
    def on_short_wait(short):
        return short.reply

    return on_short_wait


def wait_as_long_as_it_takes():
    # notebook 09's WAIT with a timeout of 0, "wait as long as it takes", written as a design: send again until a
    # replica confirms. A shard whose replica is away never does
    def on_short_wait(short):
        while short.acked < short.asked:
            short = short.again()
        return short.reply

    return on_short_wait


def trusts_the_settles():
    # a settle is "only" bookkeeping, so its reply is trusted: a failover brings the job back, and it settles twice
    def on_short_wait(short):
        from echomq_teach.cluster_connector import Unconfirmed

        if short.transition in ("complete", "retry"):
            return short.reply
        if short.transition == "enqueue" and short.again().acked >= short.asked:
            return short.reply
        raise Unconfirmed(f"{short.command}: not confirmed")

    return on_short_wait


# -- lazy routes past the probes (attack b, and ours) ----------------------------------------------------------
def unconfirmed_for_all():
    # attack b's pass: the one line the old first finding printed, for every short WAIT. Nothing told "done", but
    # nothing ever learned either: a replica only behind leaves every producer and worker an unknown outcome
    def on_short_wait(short):
        from echomq_teach.cluster_connector import Unconfirmed

        raise Unconfirmed("short")

    return on_short_wait


def trusts_retry_sweep_promote():
    # attack b's pass: the three writes the old probes made, right (an enqueue and a completion sent again and
    # read, a claim unknown), the other three trusted: a retry that buried its job, told "dead", is an end a
    # failover can take back
    def on_short_wait(short):
        from echomq_teach.cluster_connector import Unconfirmed

        if short.transition in ("enqueue", "complete") and short.again().acked >= short.asked:
            return short.reply
        if short.transition in ("enqueue", "claim", "complete"):
            raise Unconfirmed("short")
        return short.reply

    return on_short_wait


def sends_again_then_trusts():
    # "send it once more, then it must be there": the second send's WAIT is not read, so a replica that is down
    # leaves a write told done that only the primary holds
    def on_short_wait(short):
        from echomq_teach.cluster_connector import Unconfirmed

        if short.transition == "claim":
            raise Unconfirmed("short")
        short.again()
        return short.reply

    return on_short_wait


def answers_the_second_send():
    # the second send's answer handed on: it is a refusal (the first had applied), so a completion that took is
    # told "stale"
    def on_short_wait(short):
        from echomq_teach.cluster_connector import Unconfirmed

        if short.transition != "claim":
            second = short.again()
            if second.acked >= second.asked:
                return second.reply
        raise Unconfirmed("short")

    return on_short_wait
