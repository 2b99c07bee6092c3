"""Reading a run directory into its picture (plastic.core.account.picture): the shell of `plastic report`.

A run directory (plastic.run.runner) holds ``decisions.jsonl`` and ``plan.json`` from the start,
``run.json`` (the run's settings) and, once the run has ended, ``report.json``.  The picture is
built from the decisions log; the run's start, end and outcome come from its report, or, for a run
still going, from run.json and the log's last line.  Agents are priced as the run priced them
(plastic.run.runner.agent_spans): on a local cluster plastic started, an agent of a planned cluster
by its planned node and from the run's start; any other agent by its type in the run's catalog from
the time it was created or first seen.  The run's catalog (run.json's, else the embedded default) also
gives the report's floor its shapes (plastic.core.account.floor).

Every problem is an InputError naming the file (and the line of the decisions log).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from plastic.core.account.picture import RunPicture, build_picture
from plastic.core.account.report import KnownAgent, RunEvent, price_agents
from plastic.core.book.records import AgentUpdated
from plastic.core.errors import InputError
from plastic.core.model import Catalog
from plastic.core.planning.plan import Plan, plan_from_json
from plastic.fileio import read_text

log = logging.getLogger(__name__)

DECISIONS_FILE = "decisions.jsonl"
PLAN_FILE = "plan.json"
RUN_FILE = "run.json"
REPORT_FILE = "report.json"
SKIPPED_KINDS = frozenset({"event", "command", "elastic_event"})  # the book's inputs and outputs, not records


def parse_decisions(text: str, source: str) -> list[RunEvent]:
    """The records of a decisions log; a line that is not one is an InputError naming its number.
    A last line with no newline that does not parse is a write still under way: left out."""
    lines = text.split("\n")
    events: list[RunEvent] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError as exc:
            if number == len(lines):  # no newline after it: still being written
                log.debug("%s: leaving out the unfinished last line", source)
                continue
            raise InputError(f"line {number}: not JSON ({exc.msg})", source=source) from None
        if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str) \
                or not isinstance(doc.get("t"), int | float) or isinstance(doc.get("t"), bool):
            raise InputError(f"line {number}: not a decision record (an object with 't' and 'kind')", source=source)
        if doc["kind"] in SKIPPED_KINDS:
            continue
        kind, at = doc.pop("kind"), float(doc.pop("t"))
        events.append(RunEvent(kind, at, doc))
    return events


def _json(path: Path, what: str) -> Any:
    text = read_text(str(path), InputError, what)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InputError(f"not JSON (line {exc.lineno}: {exc.msg})", source=str(path)) from None


def check_run_dir(run_dir: Path) -> None:
    if not run_dir.is_dir():
        raise InputError("no such run directory", source=str(run_dir))
    for name in (DECISIONS_FILE, PLAN_FILE):
        if not (run_dir / name).is_file():
            raise InputError(f"not the directory of a plastic run (no {name})", source=str(run_dir))


def _agents(plan: Plan, settings: dict[str, Any], events: list[RunEvent], catalog: Catalog) -> list[Any]:
    known: list[KnownAgent] = []
    if not settings.get("master"):  # a local cluster plastic started: its agents stand for planned nodes
        node_of = {}
        for node in plan.nodes:
            node_of.setdefault((node.cluster, node.instance_type), node.id)
        for ev in events:
            match ev.record:
                case AgentUpdated(agent_id=agent_id, cluster=cluster, preemptible=preemptible, instance_type=itype):
                    node_id = node_of.get((str(cluster), str(itype)))
                    if node_id is not None and all(k.agent_id != agent_id for k in known):
                        known.append(KnownAgent(str(agent_id), str(cluster), bool(preemptible), str(itype), node_id))
    return price_agents({n.id: n for n in plan.nodes}, known, events, catalog)


def load_picture(run_dir: Path) -> RunPicture:
    """The picture of the run in ``run_dir`` (see the module docstring)."""
    check_run_dir(run_dir)
    decisions = run_dir / DECISIONS_FILE
    events = parse_decisions(read_text(str(decisions), InputError, "decisions log"), str(decisions))
    plan = plan_from_json(_json(run_dir / PLAN_FILE, "plan"), source=str(run_dir / PLAN_FILE))
    settings = _json(run_dir / RUN_FILE, "run") if (run_dir / RUN_FILE).is_file() else {}
    report = _json(run_dir / REPORT_FILE, "report") if (run_dir / REPORT_FILE).is_file() else None
    if not isinstance(settings, dict):
        raise InputError("not a JSON object", source=str(run_dir / RUN_FILE))
    if report is not None and not isinstance(report, dict):
        raise InputError("not a JSON object", source=str(run_dir / REPORT_FILE))
    last_at = max((ev.at for ev in events), default=None)
    try:
        if report is not None:
            started, ended = float(report["started_at"]), float(report["ended_at"])
            run_id, workflow, outcome = str(report["run_id"]), str(report["workflow"]), str(report["outcome"])
            notes = [str(n) for n in report.get("notes") or ()]
        else:
            started = float(settings.get("started_at") or (min(ev.at for ev in events) if events else 0.0))
            ended = max(last_at or started, started)
            run_id = str(settings.get("run_id") or run_dir.name)
            workflow, outcome, notes = str(settings.get("workflow") or "?"), "running", []
    except (KeyError, TypeError, ValueError) as exc:
        where = REPORT_FILE if report is not None else RUN_FILE
        raise InputError(f"missing or malformed field {exc}", source=str(run_dir / where)) from None
    from plastic.catalogs import load_catalog

    catalog = load_catalog(settings.get("catalog_path"))  # what the run priced itself with
    return build_picture(run_id=run_id, workflow=workflow, outcome=outcome, started_at=started, ended_at=ended,
                         agents=_agents(plan, settings, events, catalog), events=events, plan=plan, notes=notes,
                         running=report is None, catalog=catalog)
