"""A classroom on one shared node: who the students are and what each may touch.

``roster`` reads the class list, ``acl`` writes each student's rules (their own
keys, the read-only brand, no node-wide commands), ``provision`` creates and
revokes the users on the node, ``credentials`` writes each student's files,
``compose`` lays out the classroom folder, and ``cli`` is the instructor's
command (``echomq-classroom``, ``python -m echomq_teach.classroom``). It uses the
core and the nodes.
"""
