"""Values flowing through a workflow before it runs.

A value is either a plain CWL value (from the job order, a default or an
evaluated `valueFrom`) or `Unknown` (decided only at run time: another step's
output, or no job order).  The output of a scattered step is a list of
`Unknown` elements whose length is the scatter width, so a scatter over it has a
known width even though the elements are unknown.
"""

from __future__ import annotations

import copy
import itertools
import os
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from plastic.core.errors import WorkflowError
from plastic.cwl.glue import display_path, to_workflow_error


@dataclass(frozen=True)
class Unknown:
    """A value known only at run time; `reason` says why, for the assumptions."""

    reason: str


def first_unknown(value: Any) -> Unknown | None:
    if isinstance(value, Unknown):
        return value
    if isinstance(value, Mapping):
        items: Any = value.values()
    elif isinstance(value, list | tuple):
        items = value
    else:
        return None
    for v in items:
        found = first_unknown(v)
        if found is not None:
            return found
    return None


def link_merge(values: Sequence[Any], method: str) -> Any:
    """CWL linkMerge over the values of several sources."""
    if method == "merge_nested":
        return list(values)
    merged: list[Any] = []
    for v in values:
        if isinstance(v, Unknown):
            return Unknown(v.reason)  # its length is unknown, so is the merged list's
        if isinstance(v, list):
            merged.extend(v)
        else:
            merged.append(v)
    return merged


def pick_value(value: Any, method: str) -> Any:
    """CWL v1.2 pickValue; Unknown when any candidate is unknown."""
    if not isinstance(value, list):
        return value
    unknown = first_unknown(value)
    if unknown is not None:
        return Unknown(unknown.reason)
    non_null = [v for v in value if v is not None]
    if method == "all_non_null":
        return non_null
    if not non_null:
        raise ValueError("all sources are null")
    if method == "the_only_non_null" and len(non_null) > 1:
        raise ValueError(f"expected only one non-null source, got {len(non_null)}")
    return non_null[0]


def scatter_elements(values: Mapping[str, Any], scatter: Sequence[str], method: str,
                     ) -> tuple[list[dict[str, Any]], list[int]] | Unknown:
    """The per-element inputs of a scatter, and the shape (lengths) of its output.

    `values` maps input ids to values; returns Unknown when a scattered input's
    length is not known before run time.
    """
    arrays: list[list[Any]] = []
    for sid in scatter:
        v = values.get(sid)
        if isinstance(v, Unknown):
            return v
        if not isinstance(v, list):
            raise ValueError(f"scatter input '{sid.rsplit('/', 1)[-1]}' is not an array ({type(v).__name__})")
        arrays.append(v)
    if method == "dotproduct":
        lengths = {len(a) for a in arrays}
        if len(lengths) > 1:
            raise ValueError("dotproduct scatter over arrays of different lengths "
                             f"({', '.join(str(len(a)) for a in arrays)})")
        n = lengths.pop() if lengths else 0
        combos: list[tuple[int, ...]] = [tuple([i] * len(arrays)) for i in range(n)]
        shape = [n]
    else:  # nested_crossproduct, flat_crossproduct
        combos = list(itertools.product(*(range(len(a)) for a in arrays)))
        shape = [len(a) for a in arrays] if method == "nested_crossproduct" else [len(combos)]
    elements = []
    for combo in combos:
        element = dict(values)
        for sid, array, i in zip(scatter, arrays, combo, strict=True):
            element[sid] = array[i]
        elements.append(element)
    return elements, shape


def shaped(items: Sequence[Any], shape: Sequence[int]) -> Any:
    """Nest a flat list of per-element outputs into the scatter's output shape."""
    if len(shape) <= 1:
        return list(items)
    stride = len(items) // shape[0] if shape[0] else 0
    return [shaped(items[i * stride:(i + 1) * stride], shape[1:]) for i in range(shape[0])]


# --- the job order -----------------------------------------------------------------------------


def read_job_document(job_path: str) -> dict[str, Any]:
    """A job order file as written, its locations made absolute by cwltool's job loader; nothing added
    and nothing checked against a process (see `load_job_order`)."""
    from cwltool import CWL_CONTENT_TYPES
    from cwltool.load_tool import jobloader_id_name, jobloaderctx
    from schema_salad.ref_resolver import Loader, file_uri

    if not os.path.exists(job_path):
        raise WorkflowError("no such file", source=job_path, field="job order")
    if os.path.isdir(job_path):
        raise WorkflowError("is a directory, not a job order", source=job_path, field="job order")
    loader = Loader(copy.deepcopy(jobloaderctx))
    try:
        job, _ = loader.resolve_ref(file_uri(os.path.abspath(job_path)), checklinks=False,
                                    content_types=CWL_CONTENT_TYPES)
    except StopIteration:
        job = {}
    except Exception as exc:  # noqa: BLE001 - YAML and resolution errors alike
        raise to_workflow_error(exc, default_source=job_path, default_field="job order") from exc
    if job is None:
        job = {}
    if not isinstance(job, Mapping):
        raise WorkflowError(f"must be a mapping of input names to values, got {type(job).__name__}",
                            source=job_path, field="job order")
    job = dict(job)
    job.pop(jobloader_id_name, None)
    return job


def load_job_order(job_path: str, process: Any) -> dict[str, Any]:
    """Read a job order with cwltool's loader: Files get absolute locations and sizes.

    Validates it against the process's inputs (missing required input, wrong
    type) and checks that every input file exists.
    """
    from cwltool.builder import INPUT_OBJ_VOCAB
    from cwltool.process import add_sizes, fill_in_defaults, shortname
    from cwltool.stdfsaccess import StdFsAccess
    from cwltool.utils import (
        normalizeFilesDirs,
        path_to_loc,
        visit_files,
        visit_files_directories,
    )
    from schema_salad.validate import validate_ex

    job = read_job_document(job_path)
    for key in [k for k in job if str(k).startswith("http://commonwl.org/cwltool#")]:
        job.pop(key)  # cwltool:overrides and the like: not plastic's business
    basedir = os.path.dirname(os.path.abspath(job_path))
    fs_access = StdFsAccess(basedir)
    try:
        for inp in process.tool["inputs"]:
            name = shortname(inp["id"])
            if job.get(name) is None and "default" in inp:
                job[name] = copy.deepcopy(inp["default"])
        visit_files_directories(job, path_to_loc)
        _check_files_exist(job, job_path)
        visit_files(job, lambda f: add_sizes(fs_access, f))
        normalizeFilesDirs(job)
        fill_in_defaults(process.tool["inputs"], job, fs_access)
        schema = process.names.get_name("input_record_schema", None)
        validate_ex(schema, job, strict=False, vocab=INPUT_OBJ_VOCAB)
    except WorkflowError:
        raise
    except Exception as exc:  # noqa: BLE001 - salad's ValidationException, cwltool's WorkflowException
        err = to_workflow_error(exc, default_source=job_path, default_field="job order")
        raise WorkflowError(err.message, source=job_path, field=err.field) from exc
    return job


def _check_files_exist(job: Any, job_path: str) -> None:
    def check(obj: Any, name: str) -> None:
        if isinstance(obj, Mapping):
            if obj.get("class") in ("File", "Directory") and isinstance(obj.get("location"), str):
                loc = obj["location"]
                if loc.startswith("file://"):
                    path = urllib.parse.unquote(urllib.parse.urlsplit(loc).path)
                    if not os.path.exists(path):
                        raise WorkflowError(f"{obj['class']} not found: {display_path(path)}",
                                            source=job_path, field=name)
            for v in obj.values():
                check(v, name)
        elif isinstance(obj, list):
            for v in obj:
                check(v, name)

    for key, value in job.items():
        check(value, str(key))
