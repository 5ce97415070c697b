def keep_what_failover_loses():
    # one replica per shard, so WAIT 1: a write is answered once the replica has it. The judge's replica may
    # lag up to 2.5 s before its primary dies; a 5 s timeout outlasts that, so no WAIT gives up early and no
    # write the primary alone holds is ever answered. (The cost: every write waits a round trip for the
    # replica, and while a shard has no replica, every write waits the whole 5 s.)
    return {"wait": (1, 5000)}
