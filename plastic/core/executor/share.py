"""The share of an agent plastic's executor holds, and how the tasks of one launch make room for it.

An executor's resources are its own for as long as it runs (Mesos counts them beside its tasks'), so
the launch that starts it on an agent must leave room for them in the offer.  plastic's plans pack
tasks against whole nodes, so a task may ask for all of an agent: rather than never fitting, the
tasks of that launch give the executor its share out of their own (the largest first), which is a
hundredth of a cpu and 32 MiB, Mesos' smallest allocatable amounts.  While the executor runs, offers
lack its share, and a task that asks for the whole agent is given the share less.

Concurrent runs are frameworks of their own, each with its executor on the agents it used: an idle
one holds its share until it leaves (a minute later), and the agent offers 1.99 cpus, which is one
whole vcpu to a placer that packs whole vcpus.  Offers do not say whose executors run, only that a
hundredth of a cpu is missing; so tasks also give up to ``NEIGHBOUR_EXECUTORS`` other executors'
cpu shares out of their ask rather than wait for them to leave (Mesos' posix isolation does not
enforce cpus: a task of 2 vcpus declared as 1.95 runs the same).  Memory is not stretched that way:
usable memory is what the agent has, and a task asking for all of it waits for a neighbour's 32 MiB.
"""

from __future__ import annotations

from dataclasses import dataclass

EXECUTOR_CPUS = 0.01
EXECUTOR_RAM_MIB = 32.0
NEIGHBOUR_EXECUTORS = 4  # other frameworks' executors a task makes room for on its agent


@dataclass(frozen=True, slots=True)
class TaskShare:
    cpus: float
    ram_mib: float


def usable(offered_cpus: float, offered_ram_mib: float, executor_running: bool) -> TaskShare:
    """What tasks may be placed against in an offer: its resources, the executor's share on top when
    the executor runs already (the share is the framework's, only held by its executor), and the cpu
    shares of up to NEIGHBOUR_EXECUTORS other frameworks' executors (fit_launch takes them back)."""
    own = 1 if executor_running else 0
    return TaskShare(round(offered_cpus + (own + NEIGHBOUR_EXECUTORS) * EXECUTOR_CPUS, 6),
                     round(offered_ram_mib + own * EXECUTOR_RAM_MIB, 6))


def fit_launch(offered_cpus: float, offered_ram_mib: float, demands: list[TaskShare],
               starts_executor: bool) -> list[TaskShare]:
    """The resources to declare for each task of one launch so that, with plastic's executor's share
    when the launch starts it, they fit the offer: trimmed from the largest demand first (never below
    zero).  Tasks placed against `usable` lose at most their executor's share and the neighbours' cpus."""
    need_cpus = sum(d.cpus for d in demands) + (EXECUTOR_CPUS if starts_executor else 0.0)
    need_ram = sum(d.ram_mib for d in demands) + (EXECUTOR_RAM_MIB if starts_executor else 0.0)
    cpus = _trimmed([d.cpus for d in demands], round(need_cpus - offered_cpus, 6))
    ram = _trimmed([d.ram_mib for d in demands], round(need_ram - offered_ram_mib, 6))
    return [TaskShare(c, m) for c, m in zip(cpus, ram, strict=True)]


def _trimmed(amounts: list[float], over: float) -> list[float]:
    """``amounts`` less ``over`` in all, taken from the largest first (the first of equals first), none
    below zero; untouched when nothing is over."""
    out = list(amounts)
    for i in sorted(range(len(out)), key=lambda k: (-out[k], k)):
        if over <= 0:
            break
        cut = min(over, out[i])
        out[i] = round(out[i] - cut, 6)
        over = round(over - cut, 6)
    return out
