"""plastic's Mesos framework shell: the adapter between MesosSchedulerDriver and the pure JobBook."""

from plastic.framework.adapter import Framework, TaskSpec, agent_from_offer, status_event

__all__ = ["Framework", "TaskSpec", "agent_from_offer", "status_event"]
