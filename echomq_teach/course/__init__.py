"""The course's exercises: the registry a notebook calls, and the checks behind it.

``exercises`` is what a learner calls (``exercises.check("02.1", my_answer)``,
``exercises.hint("02.1")``); ``checks`` holds one module per notebook, each
exercise registered with the setup it needs and the check that reads the
learner's node. The course uses the core, the nodes, the lab and the floor.
"""
