"""plastic's Mesos framework shell: the adapter between MesosSchedulerDriver and the pure JobBook."""

from plastic.framework.adapter import Framework
from plastic.framework.launcher import TaskCommand

__all__ = ["Framework", "TaskCommand"]
