def part_ways():
    # (scripted @claim2 sent raw, native EMQ.CLAIM)
    return {
        "a raw call on a paused queue": ("claimed", "empty"),  # only the command reads the flag
        "a ghost at the head, a real job behind it": ("empty", "empty"),  # both pop the ghost and stop
        "a lease of 'soon'": ("error", "error"),
        "after the lease of 'soon', where the job is": ("nowhere", "pending"),  # the script wrote first
    }
