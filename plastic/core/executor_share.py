"""The share of an agent plastic's executor holds, and how the tasks of one launch make room for it.

An executor's resources are its own for as long as it runs (Mesos counts them beside its tasks'), so
the launch that starts it on an agent must leave room for them in the offer.  plastic's plans pack
tasks against whole nodes, so a task may ask for all of an agent: rather than never fitting, the
tasks of that launch give the executor its share out of their own (the largest first), which is a
hundredth of a cpu and 32 MiB, Mesos' smallest allocatable amounts.  While the executor runs, offers
lack its share, and a task that asks for the whole agent is given the share less.
"""

from __future__ import annotations

from dataclasses import dataclass

EXECUTOR_CPUS = 0.01
EXECUTOR_RAM_MIB = 32.0


@dataclass(frozen=True, slots=True)
class TaskShare:
    cpus: float
    ram_mib: float


def usable(offered_cpus: float, offered_ram_mib: float, executor_running: bool) -> TaskShare:
    """What tasks may be placed against in an offer: its resources, and the executor's share on top when
    the executor runs already (the share is the framework's, only held by its executor)."""
    if executor_running:
        return TaskShare(offered_cpus + EXECUTOR_CPUS, offered_ram_mib + EXECUTOR_RAM_MIB)
    return TaskShare(offered_cpus, offered_ram_mib)


def fit_launch(offered_cpus: float, offered_ram_mib: float, demands: list[TaskShare],
               executor_running: bool) -> list[TaskShare]:
    """The resources to declare for each task of one launch so that, with the executor's share when
    the launch starts it, they fit the offer: trimmed from the largest demand first (never below zero)."""
    need_cpus = sum(d.cpus for d in demands) + (0.0 if executor_running else EXECUTOR_CPUS)
    need_ram = sum(d.ram_mib for d in demands) + (0.0 if executor_running else EXECUTOR_RAM_MIB)
    over_cpus = max(0.0, round(need_cpus - offered_cpus, 6))
    over_ram = max(0.0, round(need_ram - offered_ram_mib, 6))
    out = list(demands)
    for i in sorted(range(len(out)), key=lambda k: (-out[k].cpus, k)):
        if over_cpus <= 0:
            break
        cut = min(over_cpus, out[i].cpus)
        out[i] = TaskShare(round(out[i].cpus - cut, 6), out[i].ram_mib)
        over_cpus = round(over_cpus - cut, 6)
    for i in sorted(range(len(out)), key=lambda k: (-out[k].ram_mib, k)):
        if over_ram <= 0:
            break
        cut = min(over_ram, out[i].ram_mib)
        out[i] = TaskShare(out[i].cpus, round(out[i].ram_mib - cut, 6))
        over_ram = round(over_ram - cut, 6)
    return out
