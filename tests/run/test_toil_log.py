"""Reading what went wrong out of a failed run's Toil log (plastic.run.toil_log), on log text
shaped as Toil 9 and cwltool write it."""

from __future__ import annotations

from plastic.run.toil_log import LoggedFailure, read_failure, step_of

STEPS = {"plastic_align": "align", "plastic_qc_trim": "qc/trim"}
T = "[2026-11-27T10:00:00+0000] [MainThread]"


def worker_log(job: str, status: int, stderr: list[str]) -> list[str]:
    return [f"{T} [W] [toil.leader] Job failed with exit value 1: 'CWLJob' {job} kind-CWLJob/instance-x v1",
            "=========>",
            f"\t{T} [I] [cwltool] [job {job}] /tmp/work$ sh \\",
            "\t    -c 'do it'",
            f"\t{T} [W] [cwltool] [job {job}] exited with status: {status}",
            f"\t{T} [E] [toil.cwl.cwltoil] Failed command standard error:",
            *(f"\t{line}" for line in stderr),
            "\t",
            f"\t{T} [C] [toil.worker] Worker crashed with traceback:",
            "\tcwl_utils.errors.WorkflowException: permanentFail",
            f"\t{T} [E] [toil.worker] Exiting the worker because of a failed job on host vm"]


def test_the_first_failed_command_names_its_step_status_and_last_stderr_line():
    lines = [f"{T} [I] [toil] Running Toil", *worker_log("main.2.plastic_align", 3, ["reading hg99", "",
                                                                                     "genome not found: hg99"]),
             *worker_log("plastic_qc_trim", 1, ["later"]),
             f"{T} [E] [root] The job store contains 1 failed jobs"]
    got = read_failure(lines, STEPS)
    assert (got.step, got.exit_status, got.stderr) == ("align", 3, "genome not found: hg99")
    assert got.describe() == "step 'align' exited with status 3: genome not found: hg99"


def test_a_tools_control_characters_do_not_reach_the_terminal():
    got = read_failure(worker_log("plastic_align", 2, ["\x1b[31mred alert\x1b[0m\r"]), STEPS)
    assert got.stderr == "?[31mred alert?[0m"


def test_a_command_with_no_standard_error_is_named_by_its_status():
    got = read_failure(worker_log("plastic_qc_trim_2", 137, []), STEPS)
    assert got.describe() == "step 'qc/trim' exited with status 137"


def test_an_unsupported_requirement_is_said_as_such():
    lines = [f"\t{T} [C] [toil.worker] Worker crashed with traceback:",
             "\tcwltool.errors.UnsupportedRequirement: --no-container, but this CommandLineTool has "
             "DockerRequirement under 'requirements'."]
    got = read_failure(lines, STEPS)
    assert got.describe() == ("it needs a feature the runner does not support: --no-container, but this "
                              "CommandLineTool has DockerRequirement under 'requirements'")


def test_a_log_without_a_failed_command_gives_its_last_error_line():
    lines = [f"{T} [I] [toil] Running Toil", f"{T} [E] [toil.leader] Error: the job store is gone", "bye"]
    assert read_failure(lines, STEPS).describe() == f"last error: {T} [E] [toil.leader] Error: the job store is gone"
    assert read_failure(["one", "two"], STEPS).describe() == "last error: two"  # no such line: the last
    assert read_failure([], STEPS) == LoggedFailure()
    assert LoggedFailure().describe() == ""


def test_job_names_map_back_to_steps():
    assert step_of("plastic_align", STEPS) == "align"
    assert step_of("main.0.plastic_align", STEPS) == "align"
    assert step_of("plastic_align_12", STEPS) == "align"
    assert step_of("plastic_qc_trim", STEPS) == "qc/trim"
    assert step_of("some_other_job", STEPS) == "some_other_job"
    assert step_of("plastic_align_x", STEPS) == "plastic_align_x"
