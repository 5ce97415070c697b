def keep_what_failover_loses():
    # one replica per shard, so WAIT 1: a write is answered once the replica has it. The replica may lag up
    # to 0.9 s before its primary dies; a 2 s timeout outlasts that, so no WAIT gives up early and no write
    # the primary alone holds is ever answered. (The cost: every write waits a round trip for the replica.)
    return {"wait": (1, 2000)}
