"""The pymesos-style call methods of MesosSchedulerDriver, one per Mesos call."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any

from plastic.mesos import calls
from plastic.mesos.calls import FiltersLike, IdLike

logger = logging.getLogger(__name__)

from plastic.mesos.sending import _done_future
from plastic.mesos.status import DriverStatus


class SchedulerCalls:
    """ACCEPT, DECLINE, KILL, ACKNOWLEDGE... as pymesos names them; each returns a Future."""

    # --------------------------------------------------- pymesos-style calls

    def launchTasks(
        self, offer_ids: IdLike | Iterable[IdLike], tasks: Iterable[Mapping[str, Any]], filters: FiltersLike = None
    ) -> Future:
        """ACCEPT the offers with one LAUNCH of ``tasks`` (TaskInfo dicts).  A task
        without ``agent_id`` gets the agent of the (first) offer."""
        ids = calls.as_id_list(offer_ids)
        task_list = [dict(t) for t in tasks]
        if not task_list:
            return self.declineOffer(ids, filters)
        with self._lock:
            known = [self._live_offers.get(o["value"]) or self._dead_offers.get(o["value"]) for o in ids]
        agent = next((a for a in known if a), None)
        for t in task_list:
            if not t.get("agent_id") and agent:
                t["agent_id"] = dict(agent)
        return self.acceptOffers(ids, [calls.launch(task_list)], filters)

    def acceptOffers(
        self, offer_ids: IdLike | Iterable[IdLike], operations: Iterable[Mapping[str, Any]], filters: FiltersLike = None
    ) -> Future:
        ops = [dict(op) for op in operations]
        body = calls.accept(offer_ids, ops, filters)
        ids = [o["value"] for o in body["accept"]["offer_ids"]]
        return self._submit("ACCEPT", body, offer_ids=ids, launches=calls.task_ids_of_launches(ops))

    def declineOffer(self, offer_ids: IdLike | Iterable[IdLike], filters: FiltersLike = None) -> Future:
        body = calls.decline(offer_ids, filters)
        return self._submit("DECLINE", body, offer_ids=[o["value"] for o in body["decline"]["offer_ids"]])

    def acceptInverseOffers(self, offer_ids: IdLike | Iterable[IdLike], filters: FiltersLike = None) -> Future:
        body = calls.accept_inverse_offers(offer_ids, filters)
        return self._submit("ACCEPT_INVERSE_OFFERS", body, offer_ids=[])

    def declineInverseOffer(self, offer_ids: IdLike | Iterable[IdLike], filters: FiltersLike = None) -> Future:
        body = calls.decline_inverse_offers(offer_ids, filters)
        return self._submit("DECLINE_INVERSE_OFFERS", body, offer_ids=[])

    def reviveOffers(self, roles: str | Iterable[str] | None = None) -> Future:
        return self._submit("REVIVE", calls.revive(roles))

    def suppressOffers(self, roles: str | Iterable[str] | None = None) -> Future:
        return self._submit("SUPPRESS", calls.suppress(roles))

    def killTask(
        self, task_id: IdLike, agent_id: IdLike | None = None, kill_policy: Mapping[str, Any] | None = None
    ) -> Future:
        return self._submit("KILL", calls.kill(task_id, agent_id, kill_policy))

    def shutdownExecutor(self, executor_id: IdLike, agent_id: IdLike) -> Future:
        return self._submit("SHUTDOWN", calls.shutdown(executor_id, agent_id))

    def acknowledgeStatusUpdate(self, status: Mapping[str, Any]) -> Future:
        """ACKNOWLEDGE an update (pass the status dict as received).  Updates without
        a uuid (reconciliation answers, master-generated ones) need none: no-op."""
        body = calls.acknowledge_status(status)
        if body is None:
            return _done_future(None)
        return self._submit("ACKNOWLEDGE", body)

    def reconcileTasks(self, statuses: Iterable[IdLike | Mapping[str, Any]] = ()) -> Future:
        """RECONCILE: an empty list asks for every task the master holds as active."""
        return self._submit("RECONCILE", calls.reconcile(statuses))

    def sendFrameworkMessage(self, executor_id: IdLike, agent_id: IdLike, data: bytes | str) -> Future:
        return self._submit("MESSAGE", calls.message(agent_id, executor_id, data))

    def requestResources(self, requests: Iterable[Mapping[str, Any]]) -> Future:
        return self._submit("REQUEST", calls.request(requests))

    def updateFramework(
        self, framework_info: Mapping[str, Any], suppressed_roles: Iterable[str] | None = None
    ) -> Future:
        """UPDATE_FRAMEWORK; the id and the required capabilities are kept."""
        with self._lock:
            current_id = self._framework_info.get("id")
        info = self._prepare_framework_info(framework_info, None, None, ())
        if current_id:
            info["id"] = current_id
        with self._lock:
            self._framework_info = info
        return self._submit("UPDATE_FRAMEWORK", calls.update_framework(info, suppressed_roles))

    def teardown(self) -> DriverStatus:
        """TEARDOWN the framework (the master kills its tasks) and stop the driver."""
        return self.stop(failover=False)

    # ------------------------------------------------------- operator calls

    def drainAgent(
        self, agent_id: IdLike, max_grace_period_s: float | None = None, mark_gone: bool = False
    ) -> None:
        """Operator DRAIN_AGENT (synchronous): offers of the agent are rescinded, its
        tasks killed (REASON_AGENT_DRAINING); it stays deactivated until reactivateAgent."""
        self.operator.drain_agent(agent_id, max_grace_period_s, mark_gone)

    def reactivateAgent(self, agent_id: IdLike) -> None:
        """Operator REACTIVATE_AGENT (synchronous)."""
        self.operator.reactivate_agent(agent_id)
