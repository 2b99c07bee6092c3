"""Threads racing to move the same task: the compare-and-set lets exactly one win."""

from __future__ import annotations

import threading

from plastic.core.book.lifecycle import TaskState, TransitionError

from .helpers import bring_task_to

T = TaskState
THREADS = 16
TASKS = 20


def test_racing_finished_and_lost_exactly_one_wins(store, run_id):
    tasks = [f"t{i}" for i in range(TASKS)]
    store.add_tasks(run_id, {t: {} for t in tasks})
    for task in tasks:
        bring_task_to(store, run_id, task, T.RUNNING)
    results: dict[str, list] = {t: [] for t in tasks}
    lock = threading.Lock()

    def racer(i: int, barrier: threading.Barrier, task: str) -> None:
        target = T.FINISHED if i % 2 else T.LOST
        barrier.wait()
        try:
            outcome = store.transition_task(run_id, task, target)
        except TransitionError as error:
            outcome = error
        with lock:
            results[task].append(outcome)

    for task in tasks:
        barrier = threading.Barrier(THREADS)
        threads = [threading.Thread(target=racer, args=(i, barrier, task)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    events = store.read_events(run_id)
    for task in tasks:
        wins = [r for r in results[task] if not isinstance(r, TransitionError)]
        losses = [r for r in results[task] if isinstance(r, TransitionError)]
        assert len(wins) == 1 and len(losses) == THREADS - 1
        [win] = wins
        assert win.previous == "RUNNING"
        final = store.get_task(run_id, task).state
        assert final == win.current
        assert all(e.current == final and e.record_id == task for e in losses)
        assert {s for s in TaskState if task in store.tasks_in_state(run_id, s)} == {final}
        from_running = [e for e in events if e.fields.get("id") == task and e.fields.get("from") == "RUNNING"]
        assert len(from_running) == 1


def test_racing_add_tasks_adds_each_task_once(store, run_id):
    barrier = threading.Barrier(8)
    added: list[list[str]] = []

    def adder() -> None:
        barrier.wait()
        added.append(store.add_tasks(run_id, {f"t{i}": {"i": i} for i in range(50)}))

    threads = [threading.Thread(target=adder) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    flat = [t for batch in added for t in batch]
    assert sorted(flat) == sorted(f"t{i}" for i in range(50))
    assert len(store.task_ids(run_id)) == 50 and len(store.tasks_in_state(run_id, T.QUEUED)) == 50
