"""The two layouts of a WfCommons trace, read into `TraceTasks` (see wfcommons.py for the format):
the schema version, the task lists, each task's id (unique), its record of measurements and its
`parents` and `children` lists, still unresolved; the graph and the numbers are checked after.

Every refusal is a `TraceError` naming the field path (`workflow.specification.tasks[4].id`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plastic.core.describe import show, type_name
from plastic.core.errors import TraceError

SUPPORTED_SCHEMA_VERSIONS: tuple[str, ...] = ("1.4", "1.5", "1.6")


def _schema_version(doc: Mapping[str, Any], *, source: str) -> str:
    if "schemaVersion" not in doc:
        raise TraceError("missing: not a WfCommons trace", source=source, field="schemaVersion")
    raw = doc["schemaVersion"]
    if isinstance(raw, str):
        version = raw.strip()
    elif isinstance(raw, int | float) and not isinstance(raw, bool):
        version = str(raw)  # a bare number 1.5 in the JSON
    else:
        version = repr(raw)
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        raise TraceError(
            f"unsupported schema version {show(raw)} (supported: {', '.join(SUPPORTED_SCHEMA_VERSIONS)})",
            source=source, field="schemaVersion",
        )
    return version


def _task_list(container: Mapping[str, Any], key: str, *, source: str, field: str, allow_empty: bool) -> list[Any]:
    if key not in container:
        raise TraceError("missing list of tasks", source=source, field=field)
    tasks = container[key]
    if not isinstance(tasks, list):
        raise TraceError(f"must be a list of tasks, got {type_name(tasks)}", source=source, field=field)
    if not tasks and not allow_empty:
        raise TraceError("empty task list: nothing to plan", source=source, field=field)
    return tasks


class TraceTasks:
    """The tasks as read, in parallel lists, before the graph is checked."""

    __slots__ = ("prefix", "exec_prefix", "ids", "index", "specs", "measured", "measured_at", "parents", "children")

    def __init__(self, prefix: str, exec_prefix: str):
        self.prefix = prefix            # field path of the task list
        self.exec_prefix = exec_prefix  # field path of the list holding the measurements
        self.ids: list[str] = []
        self.index: dict[str, int] = {}  # task id (and 1.4 `id` aliases) -> position
        self.specs: list[Mapping[str, Any]] = []
        self.measured: list[Mapping[str, Any] | None] = []
        self.measured_at: list[int] = []  # position of the measurement record, -1 when none
        self.parents: list[Any] = []
        self.children: list[Any] = []

    def field(self, i: int) -> str:
        return f"{self.prefix}[{i}]"

    def measured_field(self, i: int) -> str:
        return f"{self.exec_prefix}[{self.measured_at[i]}]"


def _mapping_or_error(value: Any, *, source: str, field: str) -> Mapping[str, Any]:
    if type(value) is not dict and not isinstance(value, Mapping):
        raise TraceError(f"must be a mapping, got {type_name(value)}", source=source, field=field)
    return value


def _refs_or_error(value: Any, *, source: str, field: str) -> Any:
    if value is None:
        return ()
    if type(value) is not list and not isinstance(value, list | tuple):
        raise TraceError(f"must be a list of task ids, got {type_name(value)}", source=source, field=field)
    return value


def _read_tasks(tasks: list[Any], read: TraceTasks, *, key: str, source: str) -> None:
    """Common reading of a task list: identifier, uniqueness, parents and children lists."""
    index = read.index
    ids, specs, parents, children = read.ids, read.specs, read.parents, read.children
    for i, task in enumerate(tasks):
        if type(task) is not dict:
            _mapping_or_error(task, source=source, field=read.field(i))
        k = key if key in task else "id"
        task_id = task.get(k)
        if type(task_id) is not str or not task_id:
            if k not in task:
                raise TraceError(f"missing task {key}", source=source, field=f"{read.field(i)}.{key}")
            if not isinstance(task_id, str) or not task_id:
                raise TraceError(f"must be a non-empty task id string, got {show(task_id)}",
                                 source=source, field=f"{read.field(i)}.{k}")
        if task_id in index:
            raise TraceError(f"duplicate task id {show(task_id)} (first at {read.field(index[task_id])})",
                             source=source, field=f"{read.field(i)}.{k}")
        index[task_id] = i
        ids.append(task_id)
        specs.append(task)
        p = task.get("parents")
        parents.append(p if type(p) is list else _refs_or_error(p, source=source, field=f"{read.field(i)}.parents"))
        c = task.get("children")
        children.append(c if type(c) is list else _refs_or_error(c, source=source, field=f"{read.field(i)}.children"))


def _read_split_layout(workflow: Mapping[str, Any], *, source: str) -> TraceTasks:
    """Schema 1.5/1.6: DAG under `specification`, measurements under `execution`, matched by id."""
    spec = _mapping_or_error(workflow["specification"], source=source, field="workflow.specification")
    tasks = _task_list(spec, "tasks", source=source, field="workflow.specification.tasks", allow_empty=False)
    read = TraceTasks("workflow.specification.tasks", "workflow.execution.tasks")
    _read_tasks(tasks, read, key="id", source=source)
    n = len(read.ids)
    read.measured = [None] * n
    read.measured_at = [-1] * n

    execution = workflow.get("execution")
    if execution is None:
        return read
    execution = _mapping_or_error(execution, source=source, field="workflow.execution")
    records = _task_list(execution, "tasks", source=source, field="workflow.execution.tasks", allow_empty=True)
    index, measured, measured_at = read.index, read.measured, read.measured_at
    for j, record in enumerate(records):
        if type(record) is not dict:
            _mapping_or_error(record, source=source, field=f"workflow.execution.tasks[{j}]")
        task_id = record.get("id")
        i = index.get(task_id) if type(task_id) is str else None
        if i is None:
            field = f"workflow.execution.tasks[{j}].id"
            if "id" not in record:
                raise TraceError("missing task id", source=source, field=field)
            if not isinstance(task_id, str) or not task_id:
                raise TraceError(f"must be a non-empty task id string, got {show(task_id)}", source=source, field=field)
            raise TraceError(f"task id {show(task_id)} is not in workflow.specification.tasks", source=source, field=field)
        if measured_at[i] >= 0:
            raise TraceError(f"duplicate execution record for task {show(task_id)} (first at {read.measured_field(i)})",
                             source=source, field=f"workflow.execution.tasks[{j}].id")
        measured[i] = record
        measured_at[i] = j
    return read


def _read_flat_layout(workflow: Mapping[str, Any], *, source: str) -> TraceTasks:
    """Schema 1.4: one `workflow.tasks` list; `name` identifies a task, its `id` is an alias."""
    tasks = _task_list(workflow, "tasks", source=source, field="workflow.tasks", allow_empty=False)
    read = TraceTasks("workflow.tasks", "workflow.tasks")
    _read_tasks(tasks, read, key="name", source=source)
    read.measured = list(read.specs)
    read.measured_at = list(range(len(read.ids)))
    # A task's `id` may stand for it in parents/children when it names no other task.
    aliases: dict[str, int] = {}
    ambiguous: set[str] = set()
    for i, task in enumerate(read.specs):
        alias = task.get("id")
        if type(alias) is str and alias and alias not in read.index:
            if alias in aliases:
                ambiguous.add(alias)
            aliases[alias] = i
    for alias in ambiguous:
        del aliases[alias]
    read.index.update(aliases)
    return read


def read_document(doc: object, *, source: str) -> tuple[str, TraceTasks]:
    """The trace's schema version and its tasks as read from either layout."""
    if not isinstance(doc, Mapping):
        raise TraceError(
            f"not a WfCommons trace: expected a JSON object with schemaVersion and workflow, got {type_name(doc)}",
            source=source,
        )
    version = _schema_version(doc, source=source)
    workflow = doc.get("workflow")
    if not isinstance(workflow, Mapping):
        what = "missing" if workflow is None else f"must be a mapping, got {type_name(workflow)}"
        raise TraceError(f"{what}: not a WfCommons trace", source=source, field="workflow")
    if "specification" in workflow:
        return version, _read_split_layout(workflow, source=source)
    if "tasks" in workflow:
        return version, _read_flat_layout(workflow, source=source)
    raise TraceError("missing (no task list under workflow): not a WfCommons trace",
                     source=source, field="workflow.specification")
