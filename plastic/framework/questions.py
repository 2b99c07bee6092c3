"""The JobBook's questions, answered off the Framework's lock (plastic.framework.adapter).

CheckJobStore asks the job store whether a job's work is done; LoadRuntimeHistory reads a tool's
recorded runtimes.  Both can be slow (a file system, Redis), so one background thread answers them in
turn and hands each answer back to the book as an event (JobStoreChecked, RuntimeHistoryLoaded).
Without a way to answer, the answer is "no" (work not done, no history), given at once.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from plastic.core.book import commands as cmd
from plastic.core.book import events as evt

log = logging.getLogger(__name__)

JobStoreAnswer = Callable[[str, str], bool]  # (job_store_id, question) -> work done
HistoryAnswer = Callable[[str], list[float]]  # tool -> recorded runtimes, newest first
Question = cmd.CheckJobStore | cmd.LoadRuntimeHistory


def answer_event(question: Question, answer: Any) -> evt.Event:
    """The event that gives the book ``answer`` (None: nothing known) to ``question``."""
    if isinstance(question, cmd.CheckJobStore):
        return evt.JobStoreChecked(question.key, question.question, bool(answer))
    return evt.RuntimeHistoryLoaded(question.tool, tuple(float(s) for s in (answer or ())))


class Questions:
    """One thread answering the book's questions in turn; ``apply`` takes each answer's event."""

    def __init__(self, apply: Callable[[evt.Event], Any], job_store: JobStoreAnswer | None,
                 runtime_history: HistoryAnswer | None):
        self.apply = apply
        self.job_store = job_store
        self.runtime_history = runtime_history
        self._queue: queue.Queue[Question | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def ask(self, question: Question) -> evt.Event | None:
        """Queue ``question`` for the thread; or, when nothing here can answer it, its answer now."""
        can = self.job_store if isinstance(question, cmd.CheckJobStore) else self.runtime_history
        if can is None:
            return answer_event(question, None)
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="plastic-questions", daemon=True)
            self._thread.start()
        self._queue.put(question)
        return None

    def empty(self) -> bool:
        """No question waits for the thread."""
        return self._queue.empty()

    def stop(self, timeout_s: float) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=timeout_s)

    def _answer(self, question: Question) -> Any:
        if isinstance(question, cmd.CheckJobStore):
            assert self.job_store is not None
            return self.job_store(question.job_store_id, question.question)
        assert self.runtime_history is not None
        return self.runtime_history(question.tool)

    def _loop(self) -> None:
        while (question := self._queue.get()) is not None:
            answer = None
            try:
                answer = self._answer(question)
            except Exception:
                log.exception("could not answer %r; answering that nothing is known", question)
            try:
                self.apply(answer_event(question, answer))
            except Exception:
                log.exception("could not apply the answer to %r", question)
