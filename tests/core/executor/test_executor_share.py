"""The executor's share (plastic.core.executor.share): a launch makes room for it out of its tasks."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from plastic.core.executor.share import (
    EXECUTOR_CPUS,
    EXECUTOR_RAM_MIB,
    NEIGHBOUR_EXECUTORS,
    TaskShare,
    fit_launch,
    usable,
)


def test_room_left_means_nothing_is_trimmed():
    demands = [TaskShare(1, 1024), TaskShare(1, 1024)]
    assert fit_launch(4, 8192, demands, starts_executor=True) == demands


def test_a_task_of_the_whole_agent_gives_the_executor_its_share():
    assert fit_launch(2, 4096, [TaskShare(2, 4096)], starts_executor=True) == [TaskShare(1.99, 4064)]


def test_the_largest_task_gives_first():
    assert fit_launch(3, 4096, [TaskShare(1, 1024), TaskShare(2, 3072)], True) == [
        TaskShare(1, 1024), TaskShare(1.99, 3040)]


def test_a_running_executors_share_and_the_neighbours_count_as_offered():
    assert usable(1.99, 4064, executor_running=True) == TaskShare(2.04, 4096)
    assert usable(2, 4096, executor_running=False) == TaskShare(2.04, 4096)


def test_another_runs_idle_executor_does_not_keep_a_whole_agent_task_waiting():
    """Another framework's executor holds 0.01 cpu / 32 MiB of a 2-cpu agent: a task of 2 vcpus still
    fits, declared with what is left after its own executor's share."""
    offered = usable(1.99, 4064, executor_running=False)
    assert int(offered.cpus) == 2 and offered.ram_mib == 4064
    assert fit_launch(1.99, 4064, [TaskShare(2, 2048)], starts_executor=True) == [TaskShare(1.98, 2048)]
    assert fit_launch(1.99, 4064, [TaskShare(2, 2048)], starts_executor=False) == [TaskShare(1.99, 2048)]


@given(st.lists(st.tuples(st.integers(0, 16), st.integers(0, 65536)), min_size=1, max_size=8),
       st.booleans(), st.integers(0, 3), st.integers(0, 4096), st.floats(0, 1), st.floats(0, 1))
def test_tasks_placed_against_what_is_usable_fit_the_offer_and_lose_little(demands, running, spare_cpus, spare_mib,
                                                                           short_cpus, short_ram):
    """Whatever an offer holds: tasks the placer fits into its usable whole vcpus and MiB are declared
    so that they (and the executor a launch starts) fit the offer, none above its ask, and together
    they give up no more than their executor's share and the neighbour executors' cpus."""
    asked_cpus, asked_ram = sum(c for c, _ in demands), sum(m for _, m in demands)
    assume(asked_cpus >= 1 and asked_ram >= 256)  # plastic's tasks: 1 vcpu, far more than 32 MiB
    shares_held = (1 if running else 0) + NEIGHBOUR_EXECUTORS  # the offer lacks up to this many shares
    cpus = round(asked_cpus + spare_cpus - short_cpus * shares_held * EXECUTOR_CPUS, 2)
    ram = round(asked_ram + spare_mib - short_ram * (1 if running else 0) * EXECUTOR_RAM_MIB)
    room = usable(cpus, ram, running)
    assert int(room.cpus + 1e-9) >= asked_cpus and int(room.ram_mib + 1e-9) >= asked_ram  # the placer fits them
    out = fit_launch(cpus, ram, [TaskShare(c, m) for c, m in demands], starts_executor=not running)
    need_cpus = sum(o.cpus for o in out) + (0 if running else EXECUTOR_CPUS)
    need_ram = sum(o.ram_mib for o in out) + (0 if running else EXECUTOR_RAM_MIB)
    assert need_cpus <= cpus + 1e-6 and need_ram <= ram + 1e-6
    assert all(0 <= o.cpus <= c and 0 <= o.ram_mib <= m for o, (c, m) in zip(out, demands, strict=True))
    given_up = 1 + NEIGHBOUR_EXECUTORS
    assert asked_cpus - sum(o.cpus for o in out) <= given_up * EXECUTOR_CPUS + 1e-6
    assert asked_ram - sum(o.ram_mib for o in out) <= EXECUTOR_RAM_MIB + 1e-6
