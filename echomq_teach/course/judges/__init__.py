"""The judges of the course's builds: a learner's mechanism run under faults, judged by the checker.

Your own queue's stages (``course/my_queue``) — ``stage_claim`` (02.2), ``stage_settle`` (03.3),
``stage_recover`` (03.6), ``stage_beat`` (03.7), ``stage_fan_in`` (05.2), ``stage_fast`` (10.4) — judged
together by ``stages`` on a folder ``queue`` loads (and probes ``queue.Scenario`` records for the checker);
the other builds one module each, ``capstone`` (07.2), ``fold`` (08.2), ``failover`` (09.2); and ``frame``,
what they share: the seeds drawn and run side by side, the one verdict over seeds (``over_seeds``: the first
failing seed's findings, then "failed on N of M"), the queue held to notebook 01's table. A check module
(``course/checks/``) registers the exercise and hands the answer to its judge; the judges import the fault
lab directly.
"""
