"""plastic.parallel.fork_map: real forked workers, their results in order, their failures raised here.

fork_map never forks a process that runs threads, and tests before these may leave one running
in pytest's process: the cases that must fork run each in a fresh interpreter (`in_fresh_process`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from bench.synthetic import mixed_tasks
from plastic.core.planning.planner import one_by_one, solve
from plastic.parallel import cores, fork_map
from tests.clirun import REPO
from tests.fakes.catalogs import SHAPES

needs_two_cores = pytest.mark.skipif(not hasattr(os, "fork") or cores() < 2, reason="needs fork and two cores")


def in_fresh_process(case) -> None:
    """Run `case` (a function of this module) in a new Python process: it must pass there."""
    code = f"import tests.test_parallel as m; m.{case.__name__}.__wrapped__()"
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]


def fresh(case):
    """A test whose body runs in a fresh process (see in_fresh_process)."""
    def test() -> None:
        in_fresh_process(test)
    test.__name__, test.__doc__, test.__wrapped__ = case.__name__, case.__doc__, case  # type: ignore[attr-defined]
    return test


def no_child_left() -> bool:
    """This process has no child at all (asked in a fresh process: pytest's own may run servers)."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@fresh
def test_results_come_back_in_the_items_order():
    for n in (0, 1, 2, 3, 7):
        assert fork_map(lambda x: x * x, list(range(n))) == [x * x for x in range(n)]
        assert no_child_left()


@needs_two_cores
@fresh
def test_the_items_are_shared_with_a_forked_worker():
    pids = fork_map(lambda _: os.getpid(), list(range(4)))
    assert pids[0] == pids[2] == os.getpid()
    assert pids[1] == pids[3] != os.getpid()
    assert no_child_left()


@needs_two_cores
@fresh
def test_a_failure_in_a_worker_s_share_is_raised_here_as_it_would_be_one_by_one():
    class Refused(Exception):
        def __init__(self, what: str, *, item: int):  # not picklable as raised: a keyword argument
            super().__init__(what)
            self.item = item

    def attempt(x: int) -> int:
        if x == 3:
            raise Refused("no three", item=x)
        return x

    with pytest.raises(Refused, match="no three") as caught:
        fork_map(attempt, [0, 1, 2, 3])  # 3 is the worker's (1 and 3)
    assert caught.value.item == 3
    assert no_child_left()


@needs_two_cores
@fresh
def test_a_failure_here_stops_and_reaps_the_workers():
    def attempt(x: int) -> int:
        if x == 0:
            raise ValueError("mine")
        return x

    with pytest.raises(ValueError, match="mine"):
        fork_map(attempt, [0, 1])
    assert no_child_left()


def test_a_process_running_threads_is_never_forked():
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert set(fork_map(lambda _: os.getpid(), list(range(4)))) == {os.getpid()}
    finally:
        stop.set()
        other.join()


@needs_two_cores
@fresh
def test_solve_with_its_strategies_in_two_processes_is_solve_one_by_one():
    # 400 tasks: the seeds' strategy and the six look-ahead variants, shared round-robin
    tasks = mixed_tasks(400, 9)
    one, two = solve(tasks, SHAPES, run_each=one_by_one), solve(tasks, SHAPES, run_each=fork_map)
    assert two.strategy == one.strategy
    assert [(n.shape, n.tasks) for n in two.nodes] == [(n.shape, n.tasks) for n in one.nodes]
    assert all(a is b for n, m in zip(one.nodes, two.nodes) for a, b in zip(n.tasks, m.tasks))  # the same objects
