"""plastic's local cluster: a master and agents speaking the Mesos v1 HTTP API on this machine.

No Mesos package exists for this platform, so `plastic local` (and
`plastic.local.testing.LocalCluster` for tests) brings a master whose wire
behaviour follows recorded transcripts of a real Mesos 1.11.1 master
(../shared/mesos-1.11-transcripts), agents that run tasks as real process
groups, and an EC2 instance-metadata endpoint per preemptible agent for spot
interruption notices.

Modules, one concept each:

    config      CLUSTER.yaml / plan JSON -> ClusterSpec (validated field by field)
    resources   scalar and range resources in fixed point (Mesos' arithmetic and wording)
    protocol    JSON shapes of events, statuses and master_info; CallError
    model       the records: Agent, RegisteredFramework, Task, MasterOffer, Filter
    allocator   offers, decline filters, rescinds (mixin of the state)
    state       MasterState: the pure state machine (stimuli + `now` in, effects out, one timer heap)
    effects     what the state asks for: Send, EndStream, Launch, Kill, KillAgent
    calls       scheduler-call checks in Mesos' order and wording; ACCEPT/DECLINE/... applied to the state
    views       operator API answers (GET_AGENTS, GET_TASKS, GET_FRAMEWORKS)
    agent       an agent's tasks as process groups, exits watched with pidfds on the event loop
    imds        EC2 IMDSv2 emulation (token, spot/instance-action, rebalance recommendation)
    cluster     the runtime: one asyncio loop carrying out effects, arming the state's next deadline
    master      aiohttp handlers: /api/v1/scheduler, /api/v1, /version, /plastic/...
    supervisor  serving in the foreground, as a daemon or as a child; state file; stopping; sweeping
    testing     LocalCluster, the child-process cluster for tests and benchmarks
    cli         `plastic local up|down|status|interrupt|kill-agent`
"""
