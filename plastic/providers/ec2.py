"""The `ec2` provider: nodes are EC2 instances of the run, created by instant EC2 Fleets
(plastic.aws.ec2_cloud), terminated by id, listed by the run's tag.

A node id is its instance id, which the instance's Mesos agent advertises in its ``instance_id``
attribute (the user data sets it from IMDSv2), so the framework matches agents to nodes.  The run's
security group and each cluster's launch template are found by tag / name, or made on first use.
Capacity errors (a refused type, a quota, unfulfillable spot) come back in CreateResult.refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from plastic.aws import ec2_cloud as ec2
from plastic.aws.ec2_cloud import Aws, NodeSettings
from plastic.core.errors import ProviderError
from plastic.core.model import Catalog
from plastic.core.planning.fleet import alternatives
from plastic.providers.base import (
    CreateResult,
    NodeRequest,
    ProviderNode,
)


class Ec2Provider:
    name = "ec2"

    def __init__(self, aws: Aws, run_id: str, settings: NodeSettings, catalog: Catalog, *,
                 clock: Callable[[], float] = time.time):
        self.aws, self.run_id, self.settings, self.catalog, self.clock = aws, ec2.check_run_id(run_id), settings, \
            catalog, clock
        self.group_id: str | None = None
        self.templates: dict[str, str] = {}  # cluster -> launch template id
        self.requests = 0
        self.since: dict[str, tuple[str, float]] = {}  # instance -> (state, first seen in it)

    def _template(self, request: NodeRequest) -> str:
        if self.group_id is None:
            self.group_id, _ = ec2.ensure_group(self.aws, self.run_id, ec2.vpc_of(self.aws, self.settings.subnet))
        if request.cluster not in self.templates:
            self.templates[request.cluster], _ = ec2.ensure_template(
                self.aws, self.run_id, request.cluster, request.instance_type, request.market, self.group_id,
                self.settings)
        return self.templates[request.cluster]

    def create(self, request: NodeRequest) -> CreateResult:
        try:
            template_id = self._template(request)
        except ProviderError:
            raise
        except Exception as exc:  # an AWS error making the group or template: the provider's, not capacity
            raise ProviderError(f"cannot prepare {request.cluster}: {ec2.describe_error(exc)}",
                                source=request.cluster) from None
        planned = self.catalog.by_name(request.instance_type)
        alts = alternatives(planned, self.catalog, request.market) if planned is not None else ()
        self.requests += 1
        answer = ec2.create_fleet(self.aws, run_id=self.run_id, cluster=request.cluster, template_id=template_id,
                                  instance_type=request.instance_type, alternatives=alts, market=request.market,
                                  count=request.count, token=f"{self.run_id}-{request.cluster}-{self.requests}",
                                  subnet=self.settings.subnet)
        return CreateResult(answer.instance_ids, answer.refused)

    def terminate(self, node_ids: Sequence[str]) -> None:
        ec2.terminate(self.aws, node_ids)

    def list_nodes(self) -> list[ProviderNode]:
        try:
            instances = ec2.run_instances(self.aws, self.run_id)
        except Exception as exc:
            raise ProviderError(f"cannot list the run's instances: {ec2.describe_error(exc)}") from None
        now = self.clock()
        out = []
        for i in instances:
            state, since = self.since.get(i.instance_id, (None, now))
            if state != i.state:
                self.since[i.instance_id] = (i.state, now if state is not None else max(i.launched_at, 0.0) or now)
            out.append(ProviderNode(node_id=i.instance_id, cluster=i.cluster, instance_type=i.instance_type,
                                    market=i.market, state=i.state, created_at=i.launched_at or now,
                                    state_since=self.since[i.instance_id][1], instance_id=i.instance_id,
                                    tags={ec2.TAG_RUN: self.run_id, ec2.TAG_CLUSTER: i.cluster}))
        return out
