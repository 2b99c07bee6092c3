"""Asked for against used, per step (plastic.core.account.usage): the fold, the findings, the money."""

from __future__ import annotations

from plastic.core.account.record_codec import decode
from plastic.core.account.usage import UsageTally


def tally(*ended, vcpus=2, ram_mib=4096, step="align"):
    t = UsageTally()
    t.add(decode("agent", {"agent_id": "a1", "vcpus": "4", "ram_mib": "16384"}))  # stream values are strings
    for i, usage in enumerate(ended):
        t.add(decode("issued", {"job_id": str(i), "step": step, "vcpus": vcpus, "ram_mib": ram_mib}))
        t.add(decode("ended", {"job_id": str(i), "agent_id": "a1", "usage": usage}))
    return t


def test_medians_and_maxima_per_step():
    t = tally({"cpu_s": 10.0, "max_rss_mib": 1000.0, "wall_s": 10.0}, {"cpu_s": 30.0, "max_rss_mib": 3000.0, "wall_s": 20.0},
              {"cpu_s": 20.0, "max_rss_mib": 2000.0, "wall_s": 20.0})
    (s,) = t.steps({"a1": 0.4})
    assert (s.tasks_measured, s.cores_used_median, s.cores_used_max) == (3, 1.0, 1.5)
    assert (s.rss_mib_median, s.rss_mib_max, s.cpu_s_total) == (2000.0, 3000.0, 60.0)
    assert (s.vcpus_fit, s.ram_mib_fit) == (2, 3840)  # 1.5 cores -> 2; 3000 MiB * 1.25 -> next 256
    assert s.finding is None and s.usd_saved == 0.0


def test_an_annotation_asking_for_far_more_is_called_out_with_what_it_would_have_saved():
    (s,) = tally({"cpu_s": 3600.0, "max_rss_mib": 300.0, "wall_s": 3600.0}, vcpus=4, ram_mib=8192).steps({"a1": 0.4})
    assert s.finding == ("asks for more than it uses: vcpus 4 (used at most 1.00 cores; 1 would fit); "
                         "vram 8192 MiB (peak 300 MiB; 512 would fit)")
    # an hour on a 0.40 USD/h node: holding all 4 vcpus (share 1.0) against 1 (share 0.25)
    assert s.usd_saved == 0.3


def test_an_annotation_asking_for_less_than_used_is_called_out_and_saves_nothing():
    (s,) = tally({"cpu_s": 100.0, "max_rss_mib": 5000.0, "wall_s": 100.0}, vcpus=1, ram_mib=4096).steps({"a1": 0.4})
    assert s.finding == "asks for less than it uses: vram 4096 MiB but a task peaked at 5000 MiB (ask 6400)"
    assert s.usd_saved == 0.0


def test_steps_without_measurements_are_left_out():
    t = UsageTally()
    t.add(decode("issued", {"job_id": "1", "step": "s", "vcpus": 1, "ram_mib": 512}))
    t.add(decode("ended", {"job_id": "1", "agent_id": "a1"}))  # the command executor measures nothing
    assert t.steps({}) == ()
