"""Reading WfCommons trace files.

`is_wfcommons_file` sniffs a path; when it has to parse the file to decide, the
parsed document is kept (one entry, keyed by path, size and mtime) so that the
`load_trace` that usually follows does not read and parse it a second time.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
from collections.abc import Iterator
from typing import Any

from plastic.core.errors import TraceError
from plastic.core.model import Workload
from plastic.core.planning.wfcommons import workload_from_wfcommons
from plastic.fileio import read_text

log = logging.getLogger(__name__)

# (real path, size, mtime_ns) -> parsed document, for the one file last sniffed.
_sniffed: tuple[tuple[str, int, int], Any] | None = None


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a big document is built.

    Parsing creates tens of thousands of containers and nothing cyclic; the
    collections they would trigger cost more than the parse itself on large traces.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _stamp(path: str) -> tuple[str, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (os.path.realpath(path), st.st_size, st.st_mtime_ns)


def _read_json(path: str) -> Any:
    text = read_text(path, TraceError, "trace")
    try:
        with _gc_paused():
            return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", source=path) from None


def is_wfcommons_file(path: str | os.PathLike[str]) -> bool:
    """True for a readable `.json` file whose top level has `workflow` and `schemaVersion`.

    Never raises.  Files that are not JSON objects are rejected from their first
    bytes; otherwise the document is parsed once and kept for `load_trace`.
    """
    global _sniffed
    path = os.fspath(path)
    if not path.lower().endswith(".json"):
        return False
    stamp = _stamp(path)
    if stamp is None:
        return False
    if _sniffed is not None and _sniffed[0] == stamp:
        doc = _sniffed[1]
    else:
        try:
            with open(path, "rb") as fh:
                head = fh.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
        except OSError:
            return False
        if not head.startswith(b"{"):
            return False
        try:
            doc = _read_json(path)
        except TraceError:
            return False
        _sniffed = (stamp, doc)
    return isinstance(doc, dict) and "workflow" in doc and "schemaVersion" in doc


def _take_sniffed(path: str) -> Any | None:
    global _sniffed
    if _sniffed is None:
        return None
    stamp = _stamp(path)
    if stamp is None or _sniffed[0] != stamp:
        return None
    doc = _sniffed[1]
    _sniffed = None  # hand it over once; do not keep big documents alive
    return doc


def load_trace(path: str | os.PathLike[str], *, default_ram_mib: int = 1024, preempt_mode: str = "infer") -> Workload:
    """Read a WfCommons JSON trace into a `Workload` (see `workload_from_wfcommons`).

    A missing or unreadable file and bad JSON (with line and column) are
    `TraceError`s whose `source` is the path, like every error in the trace.
    """
    path = os.fspath(path)
    doc = _take_sniffed(path)
    if doc is None:
        doc = _read_json(path)
    with _gc_paused():
        workload = workload_from_wfcommons(doc, source=path, default_ram_mib=default_ram_mib,
                                           preempt_mode=preempt_mode)
    log.info("trace %s: %d tasks", path, len(workload.tasks))
    return workload
