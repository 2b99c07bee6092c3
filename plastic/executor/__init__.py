"""plastic's Mesos executor: one per framework per agent, running every task placed there.

Its decisions are plastic.core.executor.book's; this package is its shell: the v1 executor HTTP API
(protocol), the task processes (processes) and the loop that joins them (shell).  `plastic executor`
and `python -m plastic.executor` start it; an agent does, with the environment it gives executors.
"""
