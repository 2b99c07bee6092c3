"""Which planned nodes become agents of a local cluster on this machine (pure).

A plan sized for the cloud may hold more nodes than one laptop should emulate.  The local
cluster keeps every agent's *shape* (vCPUs, MiB, market, instance type), so placement makes
the same decisions it would make on the real nodes, and limits the *number* of agents:

- every planned cluster keeps at least one agent (so every kind of node the plan relies on,
  in particular the on-demand node that fits the reliable tasks, is there);
- the remaining agents are shared among clusters in proportion to their planned counts
  (largest remainder, ties to the cluster listed first);
- nothing is scaled when the plan already fits within ``max_agents``.

Agents advertise the plan's capacity, not this machine's: tasks share the machine's cores.
`LocalShape.notes` says so, in plain words, whenever the plan is larger than the machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from plastic.core.planning.plan import PlannedNode


@dataclass(frozen=True, slots=True)
class LocalShape:
    nodes: tuple[PlannedNode, ...]  # the planned nodes that become agents, in plan order
    planned_nodes: int
    planned_vcpus: int
    planned_ram_mib: int
    notes: tuple[str, ...]

    @property
    def scaled(self) -> bool:
        return len(self.nodes) < self.planned_nodes


def _shares(counts: Sequence[int], total: int) -> list[int]:
    """At least one per group, the rest in proportion to ``counts`` (largest remainder)."""
    if total <= len(counts):
        return [1] * len(counts)
    extra = total - len(counts)
    weights = [c - 1 for c in counts]
    pool = sum(weights)
    if pool == 0:
        return [1] * len(counts)
    exact = [extra * w / pool for w in weights]
    base = [min(int(e), w) for e, w in zip(exact, weights)]
    left = extra - sum(base)
    order = sorted(range(len(counts)), key=lambda i: (-(exact[i] - base[i]), i))
    for i in order:
        if left <= 0:
            break
        if base[i] < weights[i]:
            base[i] += 1
            left -= 1
    return [1 + b for b in base]


def local_shape(nodes: Sequence[PlannedNode], *, machine_vcpus: int, machine_ram_mib: int,
                max_agents: int) -> LocalShape:
    """Pick the planned nodes a local cluster emulates on a machine of this size."""
    if max_agents < 1:
        raise ValueError(f"max_agents must be >= 1, got {max_agents}")
    nodes = tuple(nodes)
    vcpus = sum(n.capacity.vcpus for n in nodes)
    ram = sum(n.capacity.ram_mib for n in nodes)
    clusters: dict[str, list[PlannedNode]] = {}
    for n in nodes:
        clusters.setdefault(n.cluster, []).append(n)
    notes: list[str] = []
    if len(nodes) <= max_agents:
        chosen = nodes
    else:
        limit = max(max_agents, len(clusters))
        shares = _shares([len(v) for v in clusters.values()], limit)
        keep = {id(n) for group, k in zip(clusters.values(), shares) for n in group[:k]}
        chosen = tuple(n for n in nodes if id(n) in keep)
        per = ", ".join(f"{name} {k}/{len(group)}" for (name, group), k in zip(clusters.items(), shares))
        notes.append(f"the plan has {len(nodes)} nodes; this machine emulates {len(chosen)} of them "
                     f"(at least one per cluster: {per})")
    got_vcpus = sum(n.capacity.vcpus for n in chosen)
    got_ram = sum(n.capacity.ram_mib for n in chosen)
    if got_vcpus > machine_vcpus or got_ram > machine_ram_mib:
        notes.append(f"agents advertise the plan's shapes ({got_vcpus} vCPUs, {got_ram} MiB in all) on a machine "
                     f"with {machine_vcpus} cores and {machine_ram_mib} MiB: tasks share this machine")
    return LocalShape(chosen, len(nodes), vcpus, ram, tuple(notes))
