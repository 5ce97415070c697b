"""Wrong answers to 08.2 (a fold that survives a kill at every step), each with the finding that must name why."""


def trim_first():
    def fold_step(kit):
        # trims the slice as soon as it is read, "to keep the stream short": a kill before the commit
        # leaves the slice in neither place
        cursor = kit.cursor()
        settles = kit.read(cursor, 10)
        if not settles:
            return 0
        kit.trim(settles[-1].stream_id.next())
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
        kit.trim(kit.trim_below())
        return len(settles)

    return fold_step
