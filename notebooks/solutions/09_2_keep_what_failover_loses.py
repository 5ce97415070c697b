def keep_what_failover_loses():
    def on_short_wait(short):
        # a write only the primary holds: a failover may lose it, so its caller must not be told it happened
        from echomq_teach.cluster_connector import Unconfirmed

        # a settle or an enqueue may go once more: the node refuses a second copy (a settle's token no longer
        # matches the row, an enqueue's id exists), so it cannot apply twice. If a replica confirms this second
        # send, it has everything before it too, the first send included: the first answer stands
        if short.transition in ("complete", "retry", "enqueue"):
            if short.again().acked >= short.asked:
                return short.reply
        # a claim is never sent again (a second claim hands out a second job), and nothing waits longer than one
        # more WAIT (a shard with no replica never confirms): the caller learns nothing, an unknown outcome. The
        # producer may send again; the worker runs nothing, and the claim's lease lapses
        raise Unconfirmed(f"{short.command}: {short.acked} of {short.asked} replicas confirmed it")

    return on_short_wait
