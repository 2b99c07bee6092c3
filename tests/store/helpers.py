"""Helpers shared by the store tests."""

from __future__ import annotations

from collections import deque

from plastic.core.book.lifecycle import TABLES
from plastic.store import Store


def path_to(kind: str, start: str, goal: str) -> list[str]:
    """The states after ``start`` on a shortest allowed path to ``goal`` (the table's own edges)."""
    table = TABLES[kind]
    parent: dict[str, str | None] = {start: None}
    todo = deque([start])
    while todo:
        state = todo.popleft()
        if state == goal:
            break
        for nxt in sorted(table[state]):
            if nxt not in parent:
                parent[nxt] = state
                todo.append(nxt)
    steps = []
    state = goal
    while state != start:
        steps.append(state)
        state = parent[state]
    return steps[::-1]


def bring_task_to(store: Store, run_id: str, task_id: str, goal: str) -> None:
    for state in path_to("task", "QUEUED", goal):
        store.transition_task(run_id, task_id, state)


def blocked_in(client, command: str) -> int:
    """The server's clients blocked in ``command`` now (CLIENT LIST: that last command, flag b): a reader
    following a stream from "$" sees what is added once this count went up, not what was added before."""
    return sum(1 for c in client.client_list() if c.get("cmd") == command and "b" in c.get("flags", ""))
