"""Notebook 01's tour, moved out of the cell a learner reads (issue 22, item 6).

Every way in lands where the course's table says, in the table's order.
"""

from __future__ import annotations

from echomq_teach import jobs, ways_in

TABLE = {
    "enqueue": ("pending", ["pending"]), "claim": ("active", ["active"]),
    "retry below the cap": ("scheduled", ["schedule"]), "promote": ("pending", ["pending"]),
    "retry at the cap": ("dead", ["dead"]), "reprocess": ("pending", ["pending"]), "reap": ("pending", ["pending"]),
    "stall sweep, below its cap": ("pending", ["pending"]), "stall sweep, over its cap": ("dead", ["dead"]),
    "flow land: the parent": ("awaiting_children", []), "flow land: a child": ("pending", ["pending"]),
    "fan-in release: the last child completes": ("pending", ["pending"]),
    "a child dies under ignore: the parent": ("pending", ["pending"]),
    "a child dies under remove: the parent": ("pending", ["pending"]),
    "a child dies under fail: the parent": ("dead", ["dead"]),
}


def test_every_way_lands_where_the_table_says(conn):
    landed = ways_in.walk(conn)
    assert landed == TABLE  # the order too: the printed table follows the course's
    assert list(landed) == list(TABLE)
    lines = ways_in.table(landed).splitlines()
    assert len(lines) == len(TABLE) and lines[9].split() == ["flow", "land:", "the", "parent", "→", "state",
                                                             "awaiting_children", "set", "none"]


def test_a_second_walk_starts_from_empty_queues(conn):
    # a classroom node keeps the queues an earlier run left: each way empties its own queue first
    first = ways_in.walk(conn)
    jobs.enqueue(conn, "way-0", "left behind")
    assert ways_in.walk(conn) == first
