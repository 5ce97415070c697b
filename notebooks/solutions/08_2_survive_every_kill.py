def survive_every_kill():
    def fold_step(kit):
        # read after the cursor the floor committed, never from the stream's start: what a killed fold
        # committed and did not trim is behind the cursor, so it is not read (nor folded) again
        cursor = kit.cursor()
        settles = kit.read(cursor, 10)
        if not settles:
            return 0
        # rows and the new cursor in one transaction: a kill before it lands leaves nothing done
        kit.commit(cursor, settles)
        # only now trim, and only below what BOTH readers hold: the floor (its first id not yet held) and the
        # notifier (the first id after the last one it read). A kill anywhere leaves nothing lost to either
        kit.trim(min(kit.trim_below(), kit.notified().next()))
        return len(settles)

    return fold_step
