"""The fault lab: real worker processes run against a real node under faults, and a checker judges the run.

``history`` records every call a process makes (send, then answer); ``checker``
reads a history and the node's final state and names what went wrong (a lost
job, a settle twice, a fence violated, a job handed out twice); ``worker`` is the
worker process (its options a ``WorkerOptions``) and ``worker_process`` its
handle in the run, ``run`` the run harness and its faults, ``nemesis`` a seeded
schedule of faults, ``crashes`` the crash-point scenarios,
``handlers`` the handlers whose effects the checker can count, ``races`` threads
racing on one node, ``timeline`` the picture of a run, ``failover`` a primary
killed under the checker, ``executor_cost`` the two executors measured side by
side, ``throughput`` where a Pool's time goes (jobs/s, round trips, the server's
share) and a batch stranded by a killed worker. The lab uses the queue's core and the nodes; the core never imports it.
"""
