"""A classroom on one shared node: who the students are and what each may touch.

``roster`` reads the class list, ``acl`` writes each student's rules (their own
keys, the read-only brand, no node-wide commands), ``provision`` creates and
revokes the users on the node, ``kit_scripts`` keeps the kit's scripts on it
(students may load none), ``credentials`` writes each student's files,
``holders`` counts each student container's sockets, ``compose`` lays out the
classroom folder, and ``cli`` is the instructor's
command (``echomq-classroom``, ``python -m echomq_teach.classroom``). It uses the
core and the nodes.
"""
