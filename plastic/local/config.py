"""What the local cluster is made of: CLUSTER.yaml or a plan -> a list of agent specs.

CLUSTER.yaml::

    clusters:
      - {name: core, count: 1, cpus: 4, ram_mib: 8192, preemptible: false}
      - {name: burst-small, count: 2, cpus: 1, ram_mib: 2048, preemptible: true}

(`mem_mib`, the older name of `ram_mib`, is still read.)  Optional keys per cluster: `disk_mib` (default 10000), `instance_type`,
`attributes` (extra agent attributes, text or number) and `ports`
("31000-32000" by default, `false` for none).  Every field is checked and a
bad one raises an InputError naming the file and the field.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from plastic.core.errors import InputError
from plastic.core.naming import cluster_name_problem
from plastic.fileio import read_plan_document, yaml_problem

DEFAULT_DISK_MIB = 10000
DEFAULT_PORTS = (31000, 32000)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_CLUSTER_KEYS = {"name", "count", "cpus", "ram_mib", "mem_mib", "disk_mib", "preemptible", "instance_type",
                 "attributes", "ports"}
_RESERVED_ATTRIBUTES = {"preemptible", "cluster", "instance_type"}


@dataclass(frozen=True)
class AgentSpec:
    """One agent: its capacity and the attributes it advertises."""

    cluster: str
    cpus: float
    ram_mib: float
    preemptible: bool
    disk_mib: float = DEFAULT_DISK_MIB
    instance_type: str | None = None
    ports: tuple[int, int] | None = DEFAULT_PORTS
    attributes: tuple[tuple[str, str | float], ...] = ()
    node_id: str | None = None  # the planned node this agent stands for, if any

    def all_attributes(self) -> list[tuple[str, str | float]]:
        """Attributes in the order agents advertise them (preemptible, cluster, instance_type, extras)."""
        attrs: list[tuple[str, str | float]] = [("preemptible", "true" if self.preemptible else "false"),
                                                ("cluster", self.cluster)]
        if self.instance_type:
            attrs.append(("instance_type", self.instance_type))
        attrs.extend(self.attributes)
        return attrs


@dataclass(frozen=True)
class ClusterSpec:
    agents: tuple[AgentSpec, ...]
    source: str = ""
    cluster_names: tuple[str, ...] = field(default=())

    def to_json(self) -> str:
        return json.dumps({"source": self.source, "agents": [asdict(a) for a in self.agents]})

    @classmethod
    def from_json(cls, text: str) -> ClusterSpec:
        doc = json.loads(text)
        agents = []
        for a in doc["agents"]:
            a = dict(a)
            a["ports"] = tuple(a["ports"]) if a.get("ports") else None
            a["attributes"] = tuple(tuple(x) for x in a.get("attributes", ()))
            agents.append(AgentSpec(**a))
        return cls(tuple(agents), doc.get("source", ""), tuple(dict.fromkeys(a.cluster for a in agents)))


def _err(source: str, fld: str, message: str) -> InputError:
    return InputError(message, source=source, field=fld)


def _number(value: Any, source: str, fld: str, *, integer: bool = False, minimum: float = 0,
            strict: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _err(source, fld, f"must be {'an integer' if integer else 'a number'}, got {value!r}")
    if integer and int(value) != value:
        raise _err(source, fld, f"must be an integer, got {value!r}")
    if (value <= minimum) if strict else (value < minimum):
        raise _err(source, fld, f"must be {'>' if strict else '>='} {minimum:g}, got {value!r}")
    return int(value) if integer else float(value)


def _ports(value: Any, source: str, fld: str) -> tuple[int, int] | None:
    if value is False or value is None:
        return None
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", value)
        if m and 0 < int(m.group(1)) <= int(m.group(2)) < 65536:
            return int(m.group(1)), int(m.group(2))
    raise _err(source, fld, f"must be a range like \"31000-32000\" or false, got {value!r}")


def _attributes(value: Any, source: str, fld: str) -> tuple[tuple[str, str | float], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise _err(source, fld, f"must be a mapping of name: value, got {type(value).__name__}")
    out: list[tuple[str, str | float]] = []
    for k, v in value.items():
        if not isinstance(k, str) or not _NAME.match(k):
            raise _err(source, f"{fld}.{k}", "attribute names are letters, digits, '_', '.', '-'")
        if k in _RESERVED_ATTRIBUTES:
            raise _err(source, f"{fld}.{k}", "is set by the cluster itself; use the cluster's own field")
        if isinstance(v, bool):
            v = "true" if v else "false"
        if not isinstance(v, str | int | float):
            raise _err(source, f"{fld}.{k}", f"must be text or a number, got {v!r}")
        out.append((k, float(v) if isinstance(v, int | float) else v))
    return tuple(out)


def spec_from_doc(doc: Any, source: str = "CLUSTER.yaml") -> ClusterSpec:
    """Validate a CLUSTER.yaml document (already parsed) field by field."""
    if not isinstance(doc, Mapping):
        raise _err(source, "clusters", "the file must be a mapping with a 'clusters' list")
    unknown = set(doc) - {"clusters"}
    if unknown:
        raise _err(source, min(unknown), "unknown key (expected only 'clusters')")
    groups = doc.get("clusters")
    if not isinstance(groups, list) or not groups:
        raise _err(source, "clusters", "must be a non-empty list of clusters")
    agents: list[AgentSpec] = []
    names: list[str] = []
    for i, g in enumerate(groups):
        where = f"clusters[{i}]"
        if not isinstance(g, Mapping):
            raise _err(source, where, f"must be a mapping, got {g!r}")
        extra = set(g) - _CLUSTER_KEYS
        if extra:
            raise _err(source, f"{where}.{min(extra)}", f"unknown key (known: {', '.join(sorted(_CLUSTER_KEYS))})")
        if "ram_mib" in g and "mem_mib" in g:
            raise _err(source, f"{where}.mem_mib", "give ram_mib only (mem_mib is its older name)")
        ram_key = "mem_mib" if "mem_mib" in g else "ram_mib"
        for key in ("name", "count", "cpus", ram_key, "preemptible"):
            if key not in g:
                raise _err(source, f"{where}.{key}", "is required")
        name = g["name"]
        if (problem := cluster_name_problem(name)) is not None:
            raise _err(source, f"{where}.name", problem)
        if name in names:
            raise _err(source, f"{where}.name", f"duplicate cluster name {name!r}")
        names.append(name)
        count = int(_number(g["count"], source, f"{where}.count", integer=True))
        cpus = _number(g["cpus"], source, f"{where}.cpus")
        ram = _number(g[ram_key], source, f"{where}.{ram_key}")
        disk = _number(g.get("disk_mib", DEFAULT_DISK_MIB), source, f"{where}.disk_mib", strict=False)
        pre = g["preemptible"]
        if not isinstance(pre, bool):
            raise _err(source, f"{where}.preemptible", f"must be true or false, got {pre!r}")
        itype = g.get("instance_type")
        if itype is not None and (not isinstance(itype, str) or not _NAME.match(itype)):
            raise _err(source, f"{where}.instance_type", f"must be a type name such as m5.large, got {itype!r}")
        ports = _ports(g.get("ports", f"{DEFAULT_PORTS[0]}-{DEFAULT_PORTS[1]}"), source, f"{where}.ports")
        attrs = _attributes(g.get("attributes"), source, f"{where}.attributes")
        agents.extend(AgentSpec(cluster=name, cpus=cpus, ram_mib=ram, preemptible=pre, disk_mib=disk,
                                instance_type=itype, ports=ports, attributes=attrs) for _ in range(count))
    if not agents:
        raise _err(source, "clusters", "no agents: every count is 0")
    return ClusterSpec(tuple(agents), source, tuple(names))


def load_cluster_file(path: str) -> ClusterSpec:
    """Read and validate CLUSTER.yaml."""
    import yaml

    if not os.path.isfile(path):
        raise InputError("no such file", source=path)
    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except yaml.YAMLError as exc:
        problem, where = yaml_problem(exc)
        raise InputError(f"not valid YAML ({problem})", source=path, field=where) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read ({exc})", source=path) from None
    return spec_from_doc(doc, path)


def spec_from_plan_doc(doc: Any, source: str = "plan") -> ClusterSpec:
    """One agent per planned node, advertising the node's capacity and market."""
    from plastic.core.model import Market
    from plastic.core.planning.plan import plan_from_json

    plan = plan_from_json(doc, source=source)
    if not plan.nodes:
        raise _err(source, "nodes", "the plan has no nodes")
    agents: list[AgentSpec] = []
    for i, node in enumerate(plan.nodes):
        if node.capacity.vcpus <= 0 or node.capacity.ram_mib <= 0:
            raise _err(source, f"nodes[{i}].capacity", f"node {node.id} has no usable capacity")
        agents.append(AgentSpec(cluster=node.cluster, cpus=float(node.capacity.vcpus),
                                ram_mib=float(node.capacity.ram_mib), preemptible=node.market is Market.SPOT,
                                instance_type=node.instance_type, node_id=node.id))
    return ClusterSpec(tuple(agents), source, tuple(dict.fromkeys(a.cluster for a in agents)))


def load_plan_file(path: str) -> ClusterSpec:
    """A plan file (JSON or YAML, as `plastic plan` writes either) as the cluster of its nodes."""
    return spec_from_plan_doc(read_plan_document(path), path)


def coerce_spec(spec: Any) -> ClusterSpec:
    """ClusterSpec | path to CLUSTER.yaml or plan JSON | CLUSTER.yaml mapping | YAML text -> ClusterSpec."""
    if isinstance(spec, ClusterSpec):
        return spec
    if isinstance(spec, Mapping):
        if spec.get("schema", "").startswith("plastic.plan/") if isinstance(spec.get("schema"), str) else False:
            return spec_from_plan_doc(spec)
        return spec_from_doc(spec, "<cluster spec>")
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and "\n" not in spec and os.path.exists(spec)):
        path = os.fspath(spec)
        if path.endswith(".json"):
            with open(path, encoding="utf-8") as fh:
                try:
                    doc = json.load(fh)
                except json.JSONDecodeError:
                    doc = None
            if isinstance(doc, Mapping) and "schema" in doc:
                return load_plan_file(path)
        return load_cluster_file(path)
    if isinstance(spec, str):
        import yaml

        return spec_from_doc(yaml.safe_load(spec), "<cluster spec>")
    raise TypeError(f"cannot make a cluster spec from {type(spec).__name__}")
