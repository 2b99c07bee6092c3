"""The executor's share (plastic.core.executor_share): a launch makes room for it out of its tasks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from plastic.core.executor_share import EXECUTOR_CPUS, EXECUTOR_RAM_MIB, TaskShare, fit_launch, usable


def test_room_left_means_nothing_is_trimmed():
    demands = [TaskShare(1, 1024), TaskShare(1, 1024)]
    assert fit_launch(4, 8192, demands, executor_running=False) == demands


def test_a_task_of_the_whole_agent_gives_the_executor_its_share():
    assert fit_launch(2, 4096, [TaskShare(2, 4096)], executor_running=False) == [TaskShare(1.99, 4064)]


def test_the_largest_task_gives_first():
    assert fit_launch(3, 4096, [TaskShare(1, 1024), TaskShare(2, 3072)], False) == [
        TaskShare(1, 1024), TaskShare(1.99, 3040)]


def test_a_running_executors_share_counts_as_offered():
    assert usable(1.99, 4064, executor_running=True) == TaskShare(2.0, 4096)
    assert usable(2, 4096, executor_running=False) == TaskShare(2, 4096)


@given(st.lists(st.tuples(st.integers(0, 16), st.integers(0, 65536)), min_size=1, max_size=8),
       st.booleans(), st.integers(0, 3), st.integers(0, 4096))
def test_the_launch_always_fits_the_offer_when_the_demands_fit_what_is_usable(demands, running, spare_cpus, spare_mib):
    shares = [TaskShare(c, m) for c, m in demands]
    cpus = sum(c for c, _ in demands) + spare_cpus - (EXECUTOR_CPUS if running else 0)
    ram = sum(m for _, m in demands) + spare_mib - (EXECUTOR_RAM_MIB if running else 0)
    if cpus < 0 or ram < 0 or sum(c for c, _ in demands) < EXECUTOR_CPUS or sum(m for _, m in demands) < EXECUTOR_RAM_MIB:
        return  # (nothing to give the share from: plastic's tasks ask for 1 vcpu and far more than 32 MiB)
    out = fit_launch(cpus, ram, shares, running)
    need_cpus = sum(s.cpus for s in out) + (0 if running else EXECUTOR_CPUS)
    need_ram = sum(s.ram_mib for s in out) + (0 if running else EXECUTOR_RAM_MIB)
    assert need_cpus <= cpus + 1e-6 and need_ram <= ram + 1e-6
    assert all(0 <= o.cpus <= s.cpus and 0 <= o.ram_mib <= s.ram_mib for o, s in zip(out, shares, strict=True))
    assert sum(s.cpus - o.cpus for o, s in zip(out, shares, strict=True)) <= EXECUTOR_CPUS + 1e-6
