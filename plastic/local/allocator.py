"""Offers: who gets which agent's free resources, decline filters, rescinds.

Like the Mesos allocator, each pass offers every active agent's resources that
are neither used by tasks nor already offered, all to one framework per agent
(the one with the smallest dominant share), and skips a framework whose decline
filter on that agent covers what is free (a filter only holds while the free
resources are a subset of what was refused).  Mesos' minimum allocatable
resources apply: 0.01 cpus or 32 MiB of memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plastic.local import protocol as P
from plastic.local.effects import Send
from plastic.local.model import Agent, Filter, MasterOffer, RegisteredFramework
from plastic.local.resources import ResourceBag


class OfferBook:
    """The offer half of MasterState (a mixin: it works on the state's agents, frameworks and offers)."""

    host: str
    agents: dict[str, Agent]
    frameworks: dict[str, RegisteredFramework]
    offers: dict[str, MasterOffer]
    needs_allocation: bool
    _offer_id: Callable[[], str]
    _timer: Callable[..., None]

    def _send(self, fw: RegisteredFramework | None, event: dict[str, Any], effects: list) -> None:
        if fw is not None and fw.connected and fw.stream_id:
            effects.append(Send(fw.stream_id, event))

    def remove_offer(self, offer: MasterOffer) -> None:
        del self.offers[offer.id]
        agent = self.agents[offer.agent_id]
        agent.offers.discard(offer.id)
        agent.offered = agent.offered - offer.resources
        fw = self.frameworks.get(offer.framework_id)
        if fw is not None:
            fw.offers.discard(offer.id)
        self.needs_allocation = True

    def _rescind(self, offer: MasterOffer, effects: list) -> None:
        self.remove_offer(offer)
        self._send(self.frameworks.get(offer.framework_id), P.rescind_event(offer.id), effects)

    def add_filter(self, fw: RegisteredFramework, agent_id: str, resources: ResourceBag, seconds: float, now: float) -> None:
        if seconds <= 0 or not resources:
            return
        fw.filters.setdefault(agent_id, []).append(Filter(resources, now + seconds))
        self._timer(now + seconds, "filter")

    def _filtered(self, fw: RegisteredFramework, agent_id: str, resources: ResourceBag, now: float) -> bool:
        flist = fw.filters.get(agent_id)
        if not flist:
            return False
        flist[:] = [f for f in flist if f.until > now]
        return any(f.resources.contains(resources) for f in flist)

    def allocate(self, now: float) -> list:
        """Offer every agent's unoffered, unused resources; one OFFERS event per framework."""
        self.needs_allocation = False
        eligible = [fw for fw in self.frameworks.values() if fw.connected and not fw.suppressed]
        if not eligible:
            return []
        by_fw: dict[str, list[dict[str, Any]]] = {}
        shares = self._shares(eligible) if len(eligible) > 1 else {eligible[0].id: 0.0}
        for agent in self.agents.values():
            if not agent.offerable:
                continue
            avail = agent.available
            if not avail.allocatable():
                continue
            candidates = [fw for fw in eligible if not self._filtered(fw, agent.id, avail, now)]
            if not candidates:
                continue
            fw = min(candidates, key=lambda f: (shares[f.id], f.registered_time))
            offer = MasterOffer(self._offer_id(), fw.id, agent.id, avail)
            self.offers[offer.id] = offer
            agent.offers.add(offer.id)
            agent.offered = agent.offered + avail
            fw.offers.add(offer.id)
            if len(eligible) > 1:
                shares[fw.id] += self._share_of(avail)
            by_fw.setdefault(fw.id, []).append(self.offer_json(offer))
        return [Send(self.frameworks[fid].stream_id, P.offers_event(offers)) for fid, offers in by_fw.items()]

    def _totals(self) -> ResourceBag:
        total = ResourceBag()
        for a in self.agents.values():
            if not a.removed:
                total = total + a.total
        return total

    def _share_of(self, res: ResourceBag) -> float:
        total = self._totals()
        return max((v / total.scalars[k] for k, v in res.scalars.items() if total.scalars.get(k)), default=0.0)

    def _shares(self, frameworks: list[RegisteredFramework]) -> dict[str, float]:
        out = {}
        for fw in frameworks:
            res = ResourceBag()
            for t in fw.tasks.values():
                if not t.terminal:
                    res = res + t.resources
            for oid in fw.offers:
                res = res + self.offers[oid].resources
            out[fw.id] = self._share_of(res)
        return out

    def offer_json(self, offer: MasterOffer, *, allocation_info: bool = False) -> dict[str, Any]:
        agent = self.agents[offer.agent_id]
        d: dict[str, Any] = {
            "id": P.value(offer.id), "framework_id": P.value(offer.framework_id), "agent_id": P.value(agent.id),
            "hostname": self.host,
            "url": {"scheme": "http", "address": {"hostname": self.host, "ip": self.host, "port": agent.port},
                    "path": "/slave(1)"},
            "resources": offer.resources.to_json(role=not allocation_info, allocation_info=allocation_info),
            "attributes": P.attributes_json(agent.spec.all_attributes()),
        }
        executor_ids = sorted(e for f, e in agent.executors if f == offer.framework_id)
        if executor_ids:
            d["executor_ids"] = [P.value(e) for e in executor_ids]
        if allocation_info:
            d["allocation_info"] = {"role": "*"}
        return d
