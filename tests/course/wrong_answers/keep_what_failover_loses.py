"""Wrong answers to 09.2 (keep what the failover would lose), each with the finding that must name why."""


def no_wait():
    # asynchronous replication as it comes: every write answered by the primary alone
    return {"wait": None}


def short_wait():
    # WAIT, but a timeout far inside the replica's lag: the WAIT gives up, the write is answered anyway
    return {"wait": (1, 50)}


def two_replicas():
    # more replicas than a shard has: no write is ever confirmed in full
    return {"wait": (2, 2000)}


def as_in_the_notebook():
    # the setting the notebook's failover used, copied: its timeout outlasts a 0.4 s lag, not the judge's 2.5 s
    return {"wait": (1, 2000)}
