"""Runtime estimates per tool for the JobBook's notice decisions (let a task finish, or kill it now).

The JobBook asks `estimate(tool)` under the Framework's lock, so the answer must come from memory:
`RuntimeEstimates` is also a Recorder that learns each finished job's wall time from the `issued`
and `ended` records as they go by, and, when a tool is first seen and a Store is given, loads
that tool's history from Redis (`runtime:<tool>`, written by the StoreRecorder of every run) on a
background thread.  The estimate is a high percentile (p90 by default) of what is known, so a
task is left to finish only when nearly all its earlier runs would have fitted the window.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from collections.abc import Mapping

from plastic.store import Store
from plastic.store.stats import percentile

log = logging.getLogger(__name__)

KEEP_PER_TOOL = 200


class RuntimeEstimates:
    def __init__(self, store: Store | None = None, *, q: float = 90.0, min_samples: int = 1):
        self.store = store
        self.q = q
        self.min_samples = min_samples
        self.history: dict[str, deque[float]] = {}
        self.tool_of: dict[str, str] = {}
        self.lock = threading.Lock()
        self._loads: queue.Queue[str | None] = queue.Queue()
        self._loader: threading.Thread | None = None
        if store is not None:
            self._loader = threading.Thread(target=self._load_loop, name="plastic-runtime-history", daemon=True)
            self._loader.start()

    # ------------------------------------------------------------ the JobBook's question

    def estimate(self, tool: str | None) -> float | None:
        if not tool:
            return None
        with self.lock:
            values = list(self.history.get(tool, ()))
        return percentile(values, self.q) if len(values) >= self.min_samples else None

    # ------------------------------------------------------------ Recorder

    def record(self, kind: str, fields: Mapping[str, object]) -> None:
        if kind == "issued":
            job, tool = fields.get("job_id"), fields.get("tool")
            if job is None or not tool:
                return
            tool = str(tool)
            new = False
            with self.lock:
                self.tool_of[str(job)] = tool
                if tool not in self.history:
                    self.history[tool] = deque(maxlen=KEEP_PER_TOOL)
                    new = True
            if new and self._loader is not None:
                self._loads.put(tool)
        elif kind == "ended" and fields.get("outcome") == "finished":
            with self.lock:
                tool = self.tool_of.pop(str(fields.get("job_id")), None)
                wall = fields.get("wall_time_s")
                if tool is not None and isinstance(wall, int | float) and wall > 0:
                    self.history.setdefault(tool, deque(maxlen=KEEP_PER_TOOL)).appendleft(float(wall))
        elif kind == "ended":
            with self.lock:
                self.tool_of.pop(str(fields.get("job_id")), None)

    def close(self, timeout_s: float = 10.0) -> None:
        if self._loader is not None:
            self._loads.put(None)
            self._loader.join(timeout_s)
            self._loader = None

    # ------------------------------------------------------------ background loads

    def _load_loop(self) -> None:
        assert self.store is not None
        while True:
            tool = self._loads.get()
            if tool is None:
                return
            try:
                past = self.store.runtime_history(tool, KEEP_PER_TOOL)
            except Exception as error:  # Redis away: estimates come from this run alone
                log.warning("runtime history of %s not loaded: %s", tool, error)
                continue
            with self.lock:
                known = self.history.setdefault(tool, deque(maxlen=KEEP_PER_TOOL))
                for seconds in past:  # newest first: this run's own values stay in front
                    if len(known) >= KEEP_PER_TOOL:
                        break
                    known.append(seconds)
