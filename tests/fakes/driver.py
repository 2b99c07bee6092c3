"""A driver that records the calls the Framework makes, and the Mesos offers (as the driver hands them to
the Framework) of a scalar-resource agent: the Framework without a master."""

from __future__ import annotations


class FakeDriver:
    """A Mesos driver for ``Framework(driver_factory=FakeDriver)``: every call is kept in ``calls`` as
    (name, args, kwargs); ``of(name)`` gives the calls of one name.  No operator API."""

    def __init__(self, scheduler, info, master, **kw):
        self.scheduler, self.info, self.master, self.kw = scheduler, info, master, kw
        self.calls: list[tuple] = []

    def __getattr__(self, name):
        if name[0].islower() and name not in ("operator",):
            return lambda *a, **k: self.calls.append((name, a, k))
        raise AttributeError(name)

    @property
    def operator(self):
        raise AttributeError("no operator API")

    def of(self, name):
        return [c for c in self.calls if c[0] == name]


def offer(oid, agent, cpus, mem, preemptible=False, port=5051):
    """An offer of ``cpus`` and ``mem`` of agent ``agent``, preemptible (cluster burst) or not (core)."""
    return {"id": {"value": oid}, "agent_id": {"value": agent}, "hostname": "127.0.0.1",
            "url": {"address": {"ip": "127.0.0.1", "port": port}},
            "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": cpus}, "role": "*"},
                          {"name": "mem", "type": "SCALAR", "scalar": {"value": mem}, "role": "*"},
                          {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 1, "end": 2}]}}],
            "attributes": [{"name": "preemptible", "type": "TEXT", "text": {"value": "true" if preemptible else "false"}},
                           {"name": "cluster", "type": "TEXT", "text": {"value": "burst" if preemptible else "core"}}]}
