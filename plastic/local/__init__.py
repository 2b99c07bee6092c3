"""plastic's local cluster: a master and agents speaking the Mesos v1 HTTP API on this machine.

No Mesos package exists for this platform, so `plastic local` (and
`plastic.local.handle.LocalCluster` for `plastic run` and tests) brings a master whose wire
behaviour follows recorded transcripts of a real Mesos 1.11.1 master
(tests/data/mesos-1.11-transcripts), agents that run tasks as real process
groups, and an EC2 instance-metadata endpoint per preemptible agent for spot
interruption notices.

Modules, one concept each:

    config      CLUSTER.yaml / plan JSON -> ClusterSpec (validated field by field)
    resources   scalar and range resources in fixed point (Mesos' arithmetic and wording)
    protocol    JSON shapes of events, statuses and master_info; CallError
    model       the records: Agent, RegisteredFramework, Task, MasterOffer, Filter
    allocator   offers, decline filters, rescinds (mixin of the state)
    agent_book  agents: registration, loss and removal, draining, spot interruptions (mixin of the state)
    framework_book  frameworks: SUBSCRIBE, failover, disconnection, TEARDOWN (mixin of the state)
    task_book   tasks: launch, status updates and their acknowledgements, KILL, reconciliation (mixin)
    executors   custom executors' bookkeeping (mixin of the state)
    timers      the state's deadlines in one heap
    state       MasterState: the pure state machine (stimuli + `now` in, effects out, one timer heap)
    effects     what the state asks for: Send, EndStream, Launch, Kill, KillAgent
    calls       scheduler-call checks in Mesos' order and wording; ACCEPT/DECLINE/... applied to the state
    views       operator API answers (GET_AGENTS, GET_TASKS, GET_FRAMEWORKS)
    agent       an agent's tasks as process groups, exits watched with pidfds on the event loop
    imds        EC2 IMDSv2 emulation (token, spot/instance-action, rebalance recommendation)
    effect_loop carrying out the state's effects in order, arming its next deadline, allocation passes
    agent_processes  each agent's task runtime and executor host; the tasks' sandboxes
    agent_endpoints  each agent's HTTP port (health, /state, executor API) and IMDS server
    node_pool   the nodes a provider sees: created (booting), registered, terminated
    cluster_status  an agent's summary and the /plastic/status document
    cluster     the runtime: one asyncio loop holding the state, the agents, the streams and servers
    master      aiohttp handlers: /api/v1/scheduler, /api/v1, /version, /plastic/...
    supervisor  serving in the foreground, as a daemon or as a child; state file; stopping; sweeping
    handle      LocalCluster, the handle on a cluster in a child process (`plastic run`, tests, benchmarks)
    cli         `plastic local up|down|status|interrupt|kill-agent`
"""
