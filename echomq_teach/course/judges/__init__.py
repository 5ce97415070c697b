"""The judges of the course's builds: a learner's mechanism run under faults, judged by the checker.

One module per judged build — ``renewal`` (02.2), ``reap`` (03.3), ``fan_in``
(05.2), ``capstone`` (07.2), ``fold`` (08.2), ``failover`` (09.2) — and
``frame``, what they share: a learner's Lua loaded on a node the judge starts
(``judge_script``), the seeds drawn and run side by side, and the one verdict
over seeds (``over_seeds``: the first failing seed's findings, then "failed on
N of M"). A check module (``course/checks/``) registers the exercise and hands
the answer to its judge; the judges import the fault lab directly.
"""
