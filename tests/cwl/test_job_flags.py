"""Workflow inputs as command-line flags (plastic.cwl.job_flags): told apart from Toil's options by the
workflow's input names, read with cwltool's parser, merged over a JOB file's values."""

from __future__ import annotations

from pathlib import Path

import pytest

from plastic.core.errors import InputError
from plastic.cwl.glue import load_process
from plastic.cwl.job_flags import input_names, job_order_from_flags, split_input_flags

DATA = Path(__file__).parent / "data" / "flags"
INPUTS = frozenset({"reads", "threads", "n", "opts", "ratio"})


def test_flags_naming_inputs_take_their_values_and_the_rest_is_left_for_toil():
    args = ["--reads", "r.fa", "--logLevel", "DEBUG", "--threads=4", "-n", "-3", "--opts.depth", "2",
            "--maxCores", "2", "--ratio", "0.25"]
    mine, rest = split_input_flags(args, INPUTS)
    assert mine == ["--reads", "r.fa", "--threads=4", "-n", "-3", "--opts.depth", "2", "--ratio", "0.25"]
    assert rest == ["--logLevel", "DEBUG", "--maxCores", "2"]


def test_a_word_that_follows_no_input_is_left_for_toil():
    assert split_input_flags(["stray.yml", "--reads", "r.fa"], INPUTS) == (["--reads", "r.fa"], ["stray.yml"])
    assert split_input_flags(["--n", "1"], INPUTS) == (["--n", "1"], [])  # -n, as cwltool spells it, or --n
    assert split_input_flags(["--q", "1"], INPUTS) == ([], ["--q", "1"])  # no input q: Toil's to judge
    assert split_input_flags([], INPUTS) == ([], [])


@pytest.fixture(scope="module")
def tool():
    return load_process(str(DATA / "tool.cwl"))


def test_every_kind_of_input_from_flags(tool, monkeypatch):
    monkeypatch.chdir(DATA)
    assert input_names(tool) >= {"reads", "refs", "threads", "verbose", "opts", "either", "genome"}
    job = job_order_from_flags(tool, [
        "--reads", "r.fa", "--refs", "a.fa", "--refs", "b.fa", "--threads", "4", "--ratio", "0.25",
        "--verbose", "-n", "7", "--tags", "x", "--tags", "y", "--opts.depth", "9", "--opts.mode", "slow",
        "--genome", "."])
    assert job["reads"] == {"class": "File", "location": (DATA / "r.fa").as_uri()}
    assert [f["location"] for f in job["refs"]] == [(DATA / "a.fa").as_uri(), (DATA / "b.fa").as_uri()]
    assert job["threads"] == 4 and job["ratio"] == 0.25 and job["verbose"] is True and job["n"] == 7
    assert job["tags"] == ["x", "y"] and job["opts"] == {"depth": 9, "mode": "slow"}
    assert job["genome"]["class"] == "Directory" and job["genome"]["location"].rstrip("/") == DATA.as_uri()
    assert "outdir_name" not in job  # not given: the input's default stands when the job is read
    for spelt in (["--n", "7"], ["--n=7"], ["-n", "7"]):  # cwltool takes -n only; --n is taken as well
        assert job_order_from_flags(tool, spelt)["n"] == 7, spelt


def test_flags_go_on_top_of_the_job_file_whose_paths_stay_right_from_anywhere(tool, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the JOB file's relative paths are its own directory's
    job = job_order_from_flags(tool, ["--threads", "8", "--opts.mode", "slow"], str(DATA / "job.yml"))
    assert job["threads"] == 8 and job["opts"] == {"depth": 3, "mode": "slow"}
    assert job["reads"]["location"] == (DATA / "r.fa").as_uri()


@pytest.mark.parametrize(("flags", "said"), [
    (["--threads", "four"], "argument --threads: invalid int value: 'four'"),
    (["--threads", "1", "2"], "unrecognized arguments: 2"),
    (["--either", "3"], "input 'either' cannot be given as a flag"),
])
def test_bad_flags_are_one_line(tool, flags, said):
    with pytest.raises(InputError) as caught:
        job_order_from_flags(tool, flags)
    assert said in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith("inputs on the command line: ")
