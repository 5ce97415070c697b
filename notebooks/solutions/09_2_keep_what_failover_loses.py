def keep_what_failover_loses():
    def on_short_wait(short):
        # a write only the primary holds: a failover may lose it, so its caller must not be told it happened
        from echomq_teach.cluster_connector import Unconfirmed

        # these may go once more, because a second copy cannot apply: a settle's token no longer matches the row
        # (complete, retry), an enqueue's id is taken, a sweep finds nothing left that lapsed, a promote nothing
        # left that is due. If a replica confirms the second send, it has everything before it too, the first
        # send included: the first answer stands (the second's is a refusal, or nothing done)
        if short.transition in ("enqueue", "complete", "retry", "sweep", "promote"):
            if short.again().acked >= short.asked:
                return short.reply
        # a claim is never sent again (a second claim hands out a second job), a write we cannot name neither, and
        # nothing waits longer than one more WAIT (a shard with no replica never confirms): the caller learns
        # nothing, an unknown outcome. The producer may send again; the worker runs nothing, and the claim's lease
        # lapses
        raise Unconfirmed(f"{short.command}: {short.acked} of {short.asked} replicas confirmed it")

    return on_short_wait
