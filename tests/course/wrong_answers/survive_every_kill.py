"""Wrong answers to 08.2 (a fold that survives a kill at every step, the stream read by a notifier too), each with
the finding that must name why; and the copy attempt: the fold as notebook 08 lists its steps."""


def trim_first():
    def fold_step(kit):
        # trims the slice as soon as it is read, "to keep the stream short": a kill before the commit
        # leaves the slice in neither place
        cursor = kit.cursor()
        settles = kit.read(cursor, 10)
        if not settles:
            return 0
        kit.trim(min(settles[-1].stream_id.next(), kit.notified().next()))
        kit.commit(cursor, settles)
        return len(settles)

    return fold_step


def from_the_start():
    def fold_step(kit):
        # reads the stream from its start, trusting the trim to have removed what was folded: a kill between
        # the commit and the trim leaves a slice that the next fold reads, and commits, again
        settles = kit.read("0-0", 10)
        if not settles:
            return 0
        kit.commit(kit.cursor(), settles)
        kit.trim(min(kit.trim_below(), kit.notified().next()))
        return len(settles)

    return fold_step


def for_the_floor_alone():
    def fold_step(kit):
        # the fold as notebook 08 shows it, step by step: read after the cursor, commit, trim below what the
        # floor holds. Right for one reader; the notifier loses the settles it had not read yet
        cursor = kit.cursor()
        settles = kit.read(cursor, 10)
        if not settles:
            return 0
        kit.commit(cursor, settles)
        kit.trim(kit.trim_below())
        return len(settles)

    return fold_step


def for_the_notifier_alone():
    def fold_step(kit):
        # the trim bounded by the notifier alone: right while the notifier is behind the floor, but a kill between
        # a read and its commit trims settles the floor never got
        cursor = kit.cursor()
        settles = kit.read(cursor, 10)
        if not settles:
            return 0
        kit.trim(kit.notified().next())
        kit.commit(cursor, settles)
        return len(settles)

    return fold_step


# -- lazy routes past the kills (attack b, and ours) -----------------------------------------------------------
def one_big_slice_trimmed_first():
    # attack b's pass: the whole stream read in one slice (not at most 10), trimmed before its commit: with one
    # fold, a judge that killed only a second fold's steps had none to kill. The kit now refuses the slice
    def fold_step(kit):
        cur = kit.cursor()
        s = kit.read(cur, 1000)
        if not s:
            return 0
        kit.trim(min(s[-1].stream_id.next(), kit.notified().next()))
        kit.commit(cur, s)
        return len(s)

    return fold_step


def two_slices_in_one_commit():
    # the bound kept on each read, not on the fold: two reads of 10, one commit of 20
    def fold_step(kit):
        cur = kit.cursor()
        s = kit.read(cur, 10)
        if not s:
            return 0
        s += kit.read(s[-1].stream_id, 10)
        kit.commit(cur, s)
        kit.trim(min(kit.trim_below(), kit.notified().next()))
        return len(s)

    return fold_step


def trims_first_in_the_last_fold():
    # the right order while slices are full, and trim-then-commit for the last, partial one ("nothing comes after
    # it"): a kill between that trim and its commit loses the last slice
    def fold_step(kit):
        cursor = kit.cursor()
        settles = kit.read(cursor, 10)
        if not settles:
            return 0
        if len(settles) < 10:
            kit.trim(min(settles[-1].stream_id.next(), kit.notified().next()))
            kit.commit(cursor, settles)
        else:
            kit.commit(cursor, settles)
            kit.trim(min(kit.trim_below(), kit.notified().next()))
        return len(settles)

    return fold_step


def stops_before_the_last_trim():
    # a state left half-written: the last, partial slice is committed and the fold answers 0 at once ("nothing
    # more to read"), so its trim never comes: the stream keeps what both readers hold
    def fold_step(kit):
        cursor = kit.cursor()
        settles = kit.read(cursor, 10)
        if not settles:
            return 0
        kit.commit(cursor, settles)
        if len(settles) < 10:
            return 0
        kit.trim(min(kit.trim_below(), kit.notified().next()))
        return len(settles)

    return fold_step


def around_the_kit():
    # the right bound, the wrong order, the trim sent on the kit's own connection rather than through kit.trim:
    # a step the kit never numbers is one no kill lands after, so the kit refuses a stream changed around it
    def fold_step(kit):
        cursor = kit.cursor()
        settles = kit.read(cursor, 10)
        if not settles:
            return 0
        kit.conn.call("XTRIM", kit.stream, "MINID", str(min(settles[-1].stream_id.next(), kit.notified().next())))
        kit.commit(cursor, settles)
        return len(settles)

    return fold_step


def past_the_kit():
    # the whole fold written past the kit, on its floor and its connection: no step numbered, nothing killed
    def fold_step(kit):
        cursor = kit.cursor()
        settles = kit.read(cursor, 10)
        if not settles:
            return 0
        kit.conn.call("XTRIM", kit.stream, "MINID", str(min(settles[-1].stream_id.next(), kit.notified().next())))
        kit.floor.commit(kit.stream, cursor, settles, kit.lease.token)
        return len(settles)

    return fold_step


def trims_only_at_the_end():
    # "the folds did not trim what both readers had", mended by one trim once nothing is left to read: right after
    # every kill, but the stream keeps every settle until the queue falls quiet, which a busy one never does
    def fold_step(kit):
        cursor = kit.cursor()
        settles = kit.read(cursor, 10)
        if not settles:
            if kit.trim_below() is not None:
                kit.trim(min(kit.trim_below(), kit.notified().next()))
            return 0
        kit.commit(cursor, settles)
        return len(settles)

    return fold_step
