"""A served run's directory kept in Redis once it has ended (plastic.service.archive): what goes in, what
stays behind, the size limit, and extraction that never leaves its directory."""

from __future__ import annotations

import io
import os
import tarfile

import pytest

from plastic.core.errors import InputError
from plastic.service import archive


def made_run_dir(tmp_path):
    run = tmp_path / "r1"
    for name, text in {"plan.json": "{}", "run.json": "{}", "report.json": '{"outcome": "succeeded"}',
                       "decisions.jsonl": "{}\n", "toil.log": "log\n", "plastic-run.log": "x\n",
                       "workflow/policy.json": "{}", "jobstore/jobs/a": "job", "toil-tmp/bus": "b",
                       "redis/appendonly.aof": "aof", "submitted/workflow.cwl": "{}",
                       "submitted/inputs/0-big.fq": "ACGT" * 100}.items():
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_text(text)
    return run


def names(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return sorted(m.name for m in tar.getmembers())


def test_the_archive_keeps_the_runs_records_and_leaves_the_job_store_and_inputs_behind(tmp_path):
    data = archive.pack_run_dir(made_run_dir(tmp_path))
    assert names(data) == ["decisions.jsonl", "plan.json", "plastic-run.log", "report.json", "run.json",
                           "submitted/workflow.cwl", "toil.log", "workflow/policy.json"]
    back = archive.unpack_run_dir(data, tmp_path / "back")
    assert (back / "report.json").read_text() == '{"outcome": "succeeded"}'
    assert (back.stat().st_mode & 0o077) == 0


def test_an_archive_over_the_limit_leaves_the_logs_out_and_says_so(tmp_path, monkeypatch):
    run = made_run_dir(tmp_path)
    (run / "toil.log").write_bytes(os.urandom(1_000_000))  # does not compress
    monkeypatch.setattr(archive, "MAX_BYTES", 200_000)
    data = archive.pack_run_dir(run)
    assert "toil.log" not in names(data) and archive.NOTE in names(data)
    note = archive.unpack_run_dir(data, tmp_path / "back") / archive.NOTE
    assert "left out" in note.read_text()


def test_a_member_that_would_leave_the_directory_is_refused(tmp_path):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escaped")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(InputError, match="cannot be read"):
        archive.unpack_run_dir(out.getvalue(), tmp_path / "into")
    assert not (tmp_path / "escaped").exists()
