"""The plastic batch system's Toil options: their names, defaults and parsing, and the environment
they fall back on.

Toil puts them on its parser (``add_options``: toil-cwl-runner --plastic...) and keeps those
``set_options`` names in its config, pickled into the job store; the batch system reads them back
when it is built (``read_options``, ``open_run_from``), before it starts anything, so a wrong value
stops toil-cwl-runner with one line (Toil's InconsistentConfigurationError).  An option Toil's config
lacks falls back on the environment `plastic run` passes ($PLASTIC_MASTER, $PLASTIC_RUN_ID,
$PLASTIC_POLICY, $PLASTIC_REBALANCE, $PLASTIC_ADOPT_SECONDS, $PLASTIC_MESOS_CREDENTIAL,
$PLASTIC_REDIS_URL: a Redis URL may carry a password, so it is not kept in Toil's config when it
comes from there); $PLASTIC_RECORD_LOG names the JSON-lines log of the run's records.  The elastic
options are plastic.framework.elastic_options'.
"""

from __future__ import annotations

import logging
import os
from argparse import ArgumentParser, ArgumentTypeError, _ArgumentGroup
from dataclasses import dataclass
from typing import Any

from toil.common import InconsistentConfigurationError

from plastic.core.book.health import DEFAULT_IDLE_AGENT_S, DEFAULT_STARVING_S
from plastic.core.book.jobbook import JobBook
from plastic.core.book.notices import REBALANCE_MODES
from plastic.core.book.policy import EMPTY, PolicyError, PolicyTable
from plastic.core.errors import InputError, PlasticError
from plastic.framework.elastic_options import OPTIONS as ELASTIC_OPTIONS
from plastic.framework.elastic_options import add_elastic_options
from plastic.framework.run_store import RunHandle, load_policy, open_run
from plastic.mesos.credential import CREDENTIAL_ENV, Credential, read_credential
from plastic.store.urls import URL_ENV, with_ca

log = logging.getLogger(__name__)

MASTER_ENV = ("PLASTIC_MASTER", "PLASTIC_MASTER_URL")
RECORD_ENV = "PLASTIC_RECORD_LOG"
RUN_ENV = "PLASTIC_RUN_ID"
POLICY_ENV = "PLASTIC_POLICY"
REBALANCE_ENV = "PLASTIC_REBALANCE"
ADOPT_ENV = "PLASTIC_ADOPT_SECONDS"
DEFAULT_ADOPT_S = 300.0
OPTIONS = ("plastic_master", "plastic_failover_timeout", "plastic_credential", "plastic_redis", "plastic_redis_ca",
           "plastic_run", "plastic_policy", "plastic_rebalance", "plastic_idle_agent_s", "plastic_starving_s",
           "plastic_adopt_s")  # kept in Toil's config (set_options), before the elastic options


def _env_master() -> str | None:
    return next((os.environ[n] for n in MASTER_ENV if os.environ.get(n)), None)


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def config_or_env(config: Any, name: str, env: str) -> Any:
    """Option ``name`` of Toil's config, else environment variable ``env`` (None when neither is set)."""
    return getattr(config, name, None) or _env(env)


def record_log_path() -> str | None:
    """The JSON-lines log of the run's records ($PLASTIC_RECORD_LOG), or None."""
    return _env(RECORD_ENV)


def policy_file(value: str) -> str:
    """argparse type of --plasticPolicy: the file must be a valid policy; returns its absolute path."""
    path = os.path.abspath(value)
    try:
        load_policy(path)
    except PolicyError as error:
        raise ArgumentTypeError(str(error)) from None
    return path


def seconds_or_off(value: str) -> float:
    """argparse type of the health thresholds: seconds > 0, or 0 / "off" (0.0: no records; Toil's
    Config drops None values, so "off" cannot be None)."""
    if value.strip().lower() in ("off", "none"):
        return 0.0
    try:
        seconds = float(value)
    except ValueError:
        raise ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not 0 <= seconds < float("inf"):
        raise ArgumentTypeError(f"must be >= 0 seconds (0 or off: never), got {value!r}")
    return seconds


def _adopt_default() -> float:
    try:
        return seconds_or_off(_env(ADOPT_ENV) or str(DEFAULT_ADOPT_S))
    except ArgumentTypeError:
        return DEFAULT_ADOPT_S


def _threshold(config: Any, name: str, default: float) -> float | None:
    value = getattr(config, name, None)
    value = default if value is None else float(value)
    return value if value > 0 else None


def add_options(parser: ArgumentParser | _ArgumentGroup) -> None:
    """The batch system's options on Toil's parser (PlasticBatchSystem.add_options)."""
    parser.add_argument("--plasticMaster", dest="plastic_master", default=_env_master(),
                        help="Mesos master for the plastic batch system: http://HOST:PORT or "
                             "zk://HOSTS/mesos (default: $PLASTIC_MASTER)")
    parser.add_argument("--plasticFailoverTimeout", dest="plastic_failover_timeout", type=float,
                        default=None,
                        help="Mesos failover timeout of plastic's framework, in seconds (default: none, "
                             "the framework is torn down at shutdown)")
    parser.add_argument("--plasticCredential", dest="plastic_credential", default=_env(CREDENTIAL_ENV),
                        help="a file holding the framework's credential for a master that authenticates "
                             "frameworks: JSON {\"principal\": ..., \"secret\": ...} or one line "
                             "PRINCIPAL SECRET (default: $PLASTIC_MESOS_CREDENTIAL; the secret is never "
                             "taken on the command line)")
    parser.add_argument("--plasticRedis", dest="plastic_redis", default=None,  # $PLASTIC_REDIS_URL when used:
                        # not kept in Toil's config (pickled into the job store) with its password
                        help="Redis URL where plastic records the run's events, tasks and agents "
                             "(redis://[USER:PASSWORD@]HOST:PORT/DB, rediss://... for TLS, or unix:///PATH; "
                             "default: $PLASTIC_REDIS_URL; none: nothing is written to Redis)")
    parser.add_argument("--plasticRedisCa", dest="plastic_redis_ca", default=None, metavar="FILE",
                        help="CA file (PEM) that signs a rediss:// Redis's TLS certificate (default: the URL's "
                             "ssl_ca_certs parameter, else the system's CAs)")
    parser.add_argument("--plasticRun", dest="plastic_run", default=_env(RUN_ENV),
                        help="id of the plastic run record to write into (created when missing; default: "
                             "$PLASTIC_RUN_ID, else a new run whose id is logged); needs --plasticRedis")
    parser.add_argument("--plasticPolicy", dest="plastic_policy", default=_env(POLICY_ENV), type=policy_file,
                        help="per-tool policy table (JSON, plastic.policy/v1): preempt budget and instance "
                             "type by tool id, the last component of a job's unitName (default: "
                             "$PLASTIC_POLICY; none: Toil's preemptible decides)")
    parser.add_argument("--plasticRebalance", dest="plastic_rebalance", choices=REBALANCE_MODES,
                        default=_env(REBALANCE_ENV) or "avoid-long",
                        help="what an EC2 rebalance recommendation for an agent does: ignore (a record "
                             "only), avoid-long (no new long or unknown-length tasks there), drain (no new "
                             "tasks there); running tasks are never touched (default: avoid-long)")
    parser.add_argument("--plasticIdleAgentSeconds", dest="plastic_idle_agent_s", type=seconds_or_off,
                        default=DEFAULT_IDLE_AGENT_S,
                        help="report a burst (preemptible) agent idle this long as a candidate for release "
                             "(record idle_agent; 0 or off: never; default: 300)")
    parser.add_argument("--plasticAdoptSeconds", dest="plastic_adopt_s", type=seconds_or_off,
                        default=_env(ADOPT_ENV) or DEFAULT_ADOPT_S,
                        help="on --restart: let a task of the previous leader still running finish (and "
                             "keep its work) when it is expected to within this many seconds; Toil starts "
                             "once they have (0 or off: kill them all; default: $PLASTIC_ADOPT_SECONDS "
                             "or 300)")
    parser.add_argument("--plasticStarvingSeconds", dest="plastic_starving_s", type=seconds_or_off,
                        default=DEFAULT_STARVING_S,
                        help="report a job queued this long for a shape no live agent can hold (record "
                             "starving; 0 or off: never; default: 300)")
    add_elastic_options(parser)


def set_options(setOption: Any) -> None:
    """Toil keeps these options in its config (PlasticBatchSystem.setOptions)."""
    for name in (*OPTIONS, *ELASTIC_OPTIONS):
        setOption(name)


@dataclass(frozen=True)
class BatchOptions:
    """What the batch system takes from Toil's config, checked before anything is started."""

    master: str
    failover_timeout_s: float | None
    credential: Credential | None
    policy: PolicyTable
    book: JobBook


def read_options(config: Any) -> BatchOptions:
    """The batch system's options from Toil's config (else the environment); InconsistentConfigurationError
    when one is wrong: no master, an unreadable credential, a bad policy file or rebalance reaction."""
    master = getattr(config, "plastic_master", None) or _env_master()
    if not master:
        raise InconsistentConfigurationError(
            "the plastic batch system needs --plasticMaster URL (or $PLASTIC_MASTER)")
    failover = getattr(config, "plastic_failover_timeout", None)
    credential_path = getattr(config, "plastic_credential", None) or _env(CREDENTIAL_ENV)
    try:
        credential = read_credential(credential_path) if credential_path else None
    except InputError as exc:
        raise InconsistentConfigurationError(f"--plasticCredential {exc}") from None
    policy = policy_from(config)
    return BatchOptions(master, failover, credential, policy, book_from(config))


def book_from(config: Any) -> JobBook:
    """The JobBook the options make: rebalance reaction, health thresholds, adopt window."""
    rebalance = getattr(config, "plastic_rebalance", None) or _env(REBALANCE_ENV) or "avoid-long"
    if rebalance not in REBALANCE_MODES:
        raise InconsistentConfigurationError(
            f"plastic batch system: rebalance reaction must be one of {', '.join(REBALANCE_MODES)}, "
            f"not {rebalance!r}")
    return JobBook(rebalance=rebalance,
                   idle_agent_s=_threshold(config, "plastic_idle_agent_s", DEFAULT_IDLE_AGENT_S),
                   starving_s=_threshold(config, "plastic_starving_s", DEFAULT_STARVING_S),
                   adopt_s=_threshold(config, "plastic_adopt_s", _adopt_default()) or 0.0)


def policy_from(config: Any) -> PolicyTable:
    """The per-tool policy table of --plasticPolicy / $PLASTIC_POLICY (EMPTY without one)."""
    path = config_or_env(config, "plastic_policy", POLICY_ENV)
    if not path:
        return EMPTY
    try:
        table = load_policy(path)
    except PolicyError as error:
        raise InconsistentConfigurationError(str(error)) from None
    log.info("plastic: policy %s (%d tools)", path, len(table.tools))
    return table


def open_run_from(config: Any) -> RunHandle | None:
    """The run of --plasticRedis / $PLASTIC_REDIS_URL and --plasticRun / $PLASTIC_RUN_ID, opened (None
    without a Redis URL)."""
    url = config_or_env(config, "plastic_redis", URL_ENV)
    run_id = config_or_env(config, "plastic_run", RUN_ENV)
    if not url:
        if run_id:
            log.warning("plastic: --plasticRun %s ignored without --plasticRedis", run_id)
        return None
    fields = {"source": "toil", "toil_workflow": getattr(config, "workflowID", None)}
    try:
        url = with_ca(url, getattr(config, "plastic_redis_ca", None), "--plasticRedisCa")
        return open_run(url, run_id, fields=fields)
    except PlasticError as error:
        raise InconsistentConfigurationError(f"plastic batch system: {error}") from None
