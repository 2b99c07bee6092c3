"""The batch system's elastic options and the Provisioner they build (plastic.framework.provisioner).

With ``--plasticProvider local|ec2`` (default: none, a static cluster) the batch system keeps the
cluster the size of its queue through that provider; the limits are the ElasticPolicy's
(plastic.core.elastic.model).  `plastic run` passes them; they can be given to toil-cwl-runner by hand.
"""

from __future__ import annotations

import logging
import os
from argparse import ArgumentParser, ArgumentTypeError, _ArgumentGroup
from typing import Any, NamedTuple

from plastic.compose import AGENT_IMAGE
from plastic.core.elastic.controller import ElasticController
from plastic.core.elastic.model import DEFAULT_NODE_IDLE_S, ElasticPolicy
from plastic.core.errors import InputError, PlasticError
from plastic.core.model import Market, TaskSpec, node_shapes
from plastic.core.planning.plan import plan_from_json
from plastic.fileio import read_plan_document
from plastic.framework.adapter import Framework
from plastic.framework.provisioner import DEFAULT_INTERVAL_S, Provisioner
from plastic.store.urls import URL_ENV

log = logging.getLogger(__name__)

PROVIDERS = ("none", "local", "ec2")
OPTIONS = ("plastic_provider", "plastic_provider_url", "plastic_catalog", "plastic_plan", "plastic_max_nodes",
           "plastic_idle_s", "plastic_budget_per_hour", "plastic_budget_usd", "plastic_boot_s",
           "plastic_elastic_every_s", "plastic_region", "plastic_image_id", "plastic_subnet", "plastic_key_name",
           "plastic_instance_profile", "plastic_agent_image", "plastic_makespan_allowance")
EC2_BOOT_S = 60.0  # an EC2 instance boots and its agent joins in about a minute: the controller's lead


def positive(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ArgumentTypeError(f"not a number: {value!r}") from None
    if not 0 < number < float("inf"):
        raise ArgumentTypeError(f"must be > 0, got {value!r}")
    return number


def non_negative(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ArgumentTypeError(f"not a number: {value!r}") from None
    if not 0 <= number < float("inf"):
        raise ArgumentTypeError(f"must be >= 0, got {value!r}")
    return number


def fraction(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ArgumentTypeError(f"not a number: {value!r}") from None
    if not 0 <= number < 1:
        raise ArgumentTypeError(f"must be >= 0 and < 1, got {value!r}")
    return number


def positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ArgumentTypeError(f"not a whole number: {value!r}") from None
    if number < 1:
        raise ArgumentTypeError(f"must be >= 1, got {value!r}")
    return number


def add_elastic_options(parser: ArgumentParser | _ArgumentGroup) -> None:
    parser.add_argument("--plasticProvider", dest="plastic_provider", choices=PROVIDERS, default="none",
                        help="keep the cluster the size of the queued work through this provider: local (the local "
                             "Mesos-API cluster at --plasticProviderUrl); none: the cluster is static (default)")
    parser.add_argument("--plasticProviderUrl", dest="plastic_provider_url", default=None,
                        help="where the provider is: the local cluster's master URL (default: --plasticMaster)")
    parser.add_argument("--plasticCatalog", dest="plastic_catalog", default=None,
                        help="instance catalog (YAML) for the shapes and prices nodes are bought at (default: "
                             "the embedded AWS us-east-1 catalog)")
    parser.add_argument("--plasticPlan", dest="plastic_plan", default=None,
                        help="the run's plan (plastic.plan/v1 JSON): new nodes join its clusters by type and market")
    parser.add_argument("--plasticMaxNodes", dest="plastic_max_nodes", type=positive_int, default=None,
                        help="never more live nodes than this (default: no limit)")
    parser.add_argument("--plasticIdleSeconds", dest="plastic_idle_s", type=positive, default=DEFAULT_NODE_IDLE_S,
                        help="release a node without work for this long (default: 60)")
    parser.add_argument("--plasticBudgetPerHour", dest="plastic_budget_per_hour", type=positive, default=None,
                        help="the live nodes never cost more than this, USD per hour")
    parser.add_argument("--plasticBudgetUsd", dest="plastic_budget_usd", type=positive, default=None,
                        help="the whole run: stop growing when the projected spend reaches this, USD")
    parser.add_argument("--plasticBootSeconds", dest="plastic_boot_s", type=non_negative, default=0.0,
                        help="local provider: how long a new agent takes to boot (default: 0)")
    parser.add_argument("--plasticRegion", dest="plastic_region", default=None,
                        help="ec2 provider: the AWS region (default: AWS_REGION / the AWS config)")
    parser.add_argument("--plasticImageId", dest="plastic_image_id", default=None, help="ec2 provider: the AMI")
    parser.add_argument("--plasticSubnet", dest="plastic_subnet", default=None,
                        help="ec2 provider: the instances' subnet (default: the default VPC)")
    parser.add_argument("--plasticKeyName", dest="plastic_key_name", default=None, help="ec2 provider: key pair")
    parser.add_argument("--plasticInstanceProfile", dest="plastic_instance_profile", default=None,
                        help="ec2 provider: the instances' IAM instance profile")
    parser.add_argument("--plasticAgentImage", dest="plastic_agent_image", default=AGENT_IMAGE,
                        help="ec2 provider: the Mesos agent's Docker image the instances run")
    parser.add_argument("--plasticMakespanAllowance", dest="plastic_makespan_allowance", type=fraction, default=0.0,
                        help="with a boot to look ahead: work may start this fraction of (boot + its runtime) later "
                             "than a new node would start it, where that buys fewer nodes (default: 0)")
    parser.add_argument("--plasticElasticEverySeconds", dest="plastic_elastic_every_s", type=positive,
                        default=DEFAULT_INTERVAL_S, help="how often the cluster is looked at (default: 5)")


class RunPlan(NamedTuple):
    """What the batch system takes from the run's plan (--plasticPlan)."""

    cluster_names: dict[tuple[str, Market], str]  # (instance type, market) -> cluster: new nodes join it
    tasks: tuple[TaskSpec, ...]  # expected until Toil issues them (plan_ahead); their runtimes, estimates


def read_plan(plan_path: str | None) -> RunPlan:
    """The run's plan, as far as the batch system needs it (empty without one)."""
    if not plan_path:
        return RunPlan({}, ())
    try:
        doc = read_plan_document(plan_path)
        names = {(c["instance_type"], Market(c["market"])): c["name"] for c in doc.get("clusters", [])}
        return RunPlan(names, plan_from_json(doc, source=plan_path).tasks)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, InputError) as error:
        raise PlasticError(f"not a readable plan ({error})", source=plan_path, field="--plasticPlan") from None


def build_provisioner(config: Any, framework: Framework, *, master: str, run_id: str | None,
                      plan: RunPlan) -> Provisioner | None:
    """The Provisioner the options ask for (None: a static cluster); ``plan``: --plasticPlan as read_plan
    read it.  Raises PlasticError on bad options."""
    name = getattr(config, "plastic_provider", None) or "none"
    if name == "none":
        return None
    from plastic.catalogs import load_catalog

    catalog = load_catalog(getattr(config, "plastic_catalog", None))
    shapes = node_shapes(catalog)
    boot_s = getattr(config, "plastic_boot_s", None)
    if name == "ec2" and not boot_s:
        boot_s = EC2_BOOT_S
    policy = ElasticPolicy(max_nodes=getattr(config, "plastic_max_nodes", None),
                           idle_s=float(getattr(config, "plastic_idle_s", None) or DEFAULT_NODE_IDLE_S),
                           budget_usd_per_hour=getattr(config, "plastic_budget_per_hour", None),
                           budget_usd=getattr(config, "plastic_budget_usd", None),
                           # a node asked for now is up after the boot: look that far ahead
                           lead_s=float(boot_s or 0.0),
                           makespan_allowance=float(getattr(config, "plastic_makespan_allowance", None) or 0.0))
    controller = ElasticController(shapes, policy, cluster_names=plan.cluster_names)
    provider = make_provider(name, config, catalog, master=master, run_id=run_id)
    tags = {"plastic:run": run_id} if run_id else {}
    log.info("plastic: elastic cluster through the %s provider (%s)", name, policy)
    return Provisioner(framework, controller, provider, shapes, tags=tags, plan_tasks=plan.tasks,
                       interval_s=float(getattr(config, "plastic_elastic_every_s", None) or DEFAULT_INTERVAL_S))


def make_provider(name: str, config: Any, catalog: Any, *, master: str, run_id: str | None):
    """The provider the options name: the local cluster's (at --plasticProviderUrl, else the master,
    its agents booting in --plasticBootSeconds) or EC2's.  Raises PlasticError on an unknown name."""
    if name == "local":
        from plastic.providers.local import LocalProvider

        url = getattr(config, "plastic_provider_url", None) or master
        return LocalProvider(url, boot_s=float(getattr(config, "plastic_boot_s", None) or 0.0))
    if name == "ec2":
        return ec2_provider(config, catalog, master=master, run_id=run_id)
    raise PlasticError(f"unknown provider {name!r} (one of {', '.join(PROVIDERS)})", field="--plasticProvider")


def ec2_provider(config: Any, catalog: Any, *, master: str, run_id: str | None):
    """The ec2 provider of a run: its instances' agents join ``master`` and their watchers publish into
    the run's Redis (--plasticRedis).  Raises PlasticError (an InputError) on missing options."""
    from plastic.aws.ec2_cloud import Aws, NodeSettings
    from plastic.providers.ec2 import Ec2Provider

    image_id = getattr(config, "plastic_image_id", None)
    if not image_id:
        raise PlasticError("the ec2 provider needs --plasticImageId", field="--plasticImageId")
    if not run_id:
        raise PlasticError("the ec2 provider needs a run (--plasticRun and --plasticRedis)", field="--plasticRun")
    redis = getattr(config, "plastic_redis", None) or os.environ.get(URL_ENV) or ""
    settings = NodeSettings(image_id=image_id, master=master, redis=redis,
                            agent_image=getattr(config, "plastic_agent_image", None) or AGENT_IMAGE,
                            key_name=getattr(config, "plastic_key_name", None),
                            instance_profile=getattr(config, "plastic_instance_profile", None),
                            subnet=getattr(config, "plastic_subnet", None))
    return Ec2Provider(Aws.connect(getattr(config, "plastic_region", None)), run_id, settings, catalog)
