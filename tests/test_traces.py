"""load_trace / is_wfcommons_file on real WfCommons traces and on synthetic ones."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from plastic import traces
from plastic.core.errors import TraceError
from plastic.core.model import PREEMPTIBLE, RELIABLE, Workload
from plastic.traces import is_wfcommons_file, load_trace
from tests.data_paths import REPO, WFINSTANCES, needs, require

REAL = sorted(WFINSTANCES.glob("*.json"))
needs_real = needs(WFINSTANCES)
MIB = 1 << 20


def _synthetic() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_synthetic", REPO / "bench" / "synthetic.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


synthetic = _synthetic()


def real(name: str) -> Path:
    return require(WFINSTANCES / name)


# --- the five real traces ----------------------------------------------------

@needs_real
@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_real_trace_follows_the_rules(path: Path) -> None:
    doc = json.loads(path.read_text())
    spec = doc["workflow"]["specification"]["tasks"]
    measured = {t["id"]: t for t in doc["workflow"]["execution"]["tasks"]}
    w = load_trace(str(path))
    assert isinstance(w, Workload) and w.source == str(path)
    assert len(w.tasks) == len(spec)
    assert [t.id for t in w.tasks] == [s["id"] for s in spec]
    child_of: dict[str, set[str]] = {s["id"]: set() for s in spec}
    for s in spec:
        for c in s["children"]:
            child_of[c].add(s["id"])
    ram_unknown = 0
    for t, s in zip(w.tasks, spec):
        m = measured[t.id]
        assert t.runtime_s == m["runtimeInSeconds"]
        if "coreCount" in m:
            assert t.vcpus == max(1, math.ceil(m["coreCount"]))
        else:
            assert t.vcpus == max(1, math.ceil(m["avgCPU"] / 100))
        if m.get("memoryInBytes"):
            assert t.ram_mib == math.ceil(m["memoryInBytes"] / MIB)
        else:
            assert t.ram_mib == 1024
            ram_unknown += 1
        assert set(t.parents) == set(s["parents"]) | child_of[t.id]
        assert len(t.parents) == len(set(t.parents))
    if ram_unknown:
        assert f"ram of {ram_unknown} of {len(spec)} tasks unknown: assumed 1024 MiB." in w.assumptions
    assert any(a.startswith("preempt inferred from replicated categories") for a in w.assumptions)


@needs_real
def test_blast_replicas_are_preemptible() -> None:
    w = load_trace(str(real("blast-chameleon-medium-001.json")))
    kinds = Counter((t.id.split("_ID")[0], t.preempt) for t in w.tasks)
    assert kinds == Counter({("blastall", PREEMPTIBLE): 300, ("split_fasta", RELIABLE): 1,
                             ("cat_blast", RELIABLE): 1, ("cat", RELIABLE): 1})
    assert "preempt inferred from replicated categories: 300 of 303 tasks preemptible" in " ".join(w.assumptions)
    split = next(t for t in w.tasks if t.id.startswith("split_fasta"))
    assert split.parents == () and split.vcpus == 1 and split.runtime_s == pytest.approx(0.928728)


@needs_real
def test_forkjoin_fork_and_join_are_reliable() -> None:
    w = load_trace(str(real("helloworld-forkjoin-10-chameleon.json")))
    tasks = {t.id: t for t in w.tasks}
    fork, join = tasks.pop("cpuhog_forkjoin_00000001"), tasks.pop("cpuhog_forkjoin_00000010")
    assert fork.preempt == RELIABLE and join.preempt == RELIABLE
    assert len(tasks) == 8 and all(t.preempt == PREEMPTIBLE and t.parents == (fork.id,) for t in tasks.values())
    assert set(join.parents) == set(tasks)
    # no coreCount in this trace: vcpus come from avgCPU, which is said
    assert any("derived from avgCPU" in a for a in w.assumptions)


@needs_real
def test_nextflow_trace_names_are_categories() -> None:
    w = load_trace(str(real("rnaseq-dirt02-001.json")))
    doc = json.loads(real("rnaseq-dirt02-001.json").read_text())
    name = {s["id"]: s["name"] for s in doc["workflow"]["specification"]["tasks"]}
    salmon = [t for t in w.tasks if name[t.id].endswith("FASTQ_SUBSAMPLE_FQ_SALMON.SALMON_QUANT")]
    assert len(salmon) > 1 and all(t.preempt == PREEMPTIBLE for t in salmon)
    singles = [t for t in w.tasks if sum(1 for n in name.values() if n == name[t.id]) == 1]
    assert singles and all(t.preempt == RELIABLE for t in singles)


@needs_real
@pytest.mark.parametrize("mode", ["all", "none"])
def test_preempt_mode_and_default_ram_pass_through(mode: str) -> None:
    w = load_trace(str(real("methylseq-dirt02-001.json")), preempt_mode=mode, default_ram_mib=4096)
    expected = PREEMPTIBLE if mode == "all" else RELIABLE
    assert all(t.preempt == expected for t in w.tasks)
    assert "ram of 4 of 36 tasks unknown: assumed 4096 MiB." in w.assumptions


@needs_real
@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_real_traces_are_sniffed(path: Path) -> None:
    assert is_wfcommons_file(str(path))


# --- file errors -----------------------------------------------------------------

def test_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "none.json")
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert info.value.source == path and "no such trace file" in str(info.value)


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(TraceError) as info:
        load_trace(str(tmp_path))
    assert info.value.source == str(tmp_path)


def test_bad_json_gives_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('{\n  "schemaVersion": "1.5",\n  "workflow": {,}\n}\n')
    with pytest.raises(TraceError) as info:
        load_trace(str(path))
    text = str(info.value)
    assert info.value.source == str(path)
    assert text.startswith(f"{path}: invalid JSON at line 3, column 16")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(b'{"name": "\xff"}')
    with pytest.raises(TraceError, match="UTF-8"):
        load_trace(str(path))


def test_trace_errors_carry_the_path(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": "1.5", "workflow": {"specification": {"tasks": [
        {"id": "a", "parents": ["b"], "children": []}]}}}))
    with pytest.raises(TraceError) as info:
        load_trace(str(path))
    assert str(info.value).startswith(f"{path}: workflow.specification.tasks[0].parents: ")


# --- sniffing ----------------------------------------------------------------------

@pytest.mark.parametrize(("name", "content", "expected"), [
    ("t.json", {"schemaVersion": "1.5", "workflow": {}}, True),
    ("T.JSON", {"schemaVersion": "1.4", "workflow": {"tasks": []}}, True),
    ("t.json", {"workflow": {}}, False),
    ("t.json", {"schemaVersion": "1.5"}, False),
    ("t.json", [{"schemaVersion": "1.5", "workflow": {}}], False),
    ("t.yaml", {"schemaVersion": "1.5", "workflow": {}}, False),
    ("t.cwl", {"schemaVersion": "1.5", "workflow": {}}, False),
])
def test_sniff(tmp_path: Path, name: str, content: object, expected: bool) -> None:
    path = tmp_path / name
    path.write_text(json.dumps(content))
    assert is_wfcommons_file(str(path)) is expected


@pytest.mark.parametrize("content", ["", "not json {", "cwlVersion: v1.2\nclass: Workflow\n", '{"workflow": '])
def test_sniff_rejects_non_json(tmp_path: Path, content: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    assert is_wfcommons_file(str(path)) is False


def test_sniff_missing_file_and_directory(tmp_path: Path) -> None:
    assert is_wfcommons_file(str(tmp_path / "none.json")) is False
    folder = tmp_path / "dir.json"
    folder.mkdir()
    assert is_wfcommons_file(str(folder)) is False


def test_sniffed_document_is_reused_once_and_never_stale(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    synthetic.write_wfcommons(synthetic.mixed_tasks(5, seed=3), path)
    assert is_wfcommons_file(path)
    assert traces._sniffed is not None  # parsed once, kept for the load that follows
    first = load_trace(path)
    assert traces._sniffed is None  # handed over, not kept alive
    assert len(first.tasks) == 5
    # sniff, then the file changes: the load must see the new content
    assert is_wfcommons_file(path)
    synthetic.write_wfcommons(synthetic.mixed_tasks(7, seed=3), path)
    assert len(load_trace(path).tasks) == 7


# --- synthetic workloads (bench/synthetic.py) ---------------------------------------

def test_mixed_tasks_are_seeded_and_in_range() -> None:
    a = synthetic.mixed_tasks(2000, seed=1)
    assert a == synthetic.mixed_tasks(2000, seed=1)
    assert a != synthetic.mixed_tasks(2000, seed=2)
    assert [t.id for t in a[:2]] == ["t00001", "t00002"] and a[-1].id == "t02000"
    assert {t.vcpus for t in a} == set(range(1, 9))
    for t in a:
        gib_per_vcpu = t.ram_mib / 1024 / t.vcpus
        assert 0.5 - 1e-3 <= gib_per_vcpu <= 8 + 1e-3
        assert t.runtime_s == 60.0 and t.parents == ()


def test_synthetic_round_trip(tmp_path: Path) -> None:
    tasks = synthetic.mixed_tasks(300, seed=7)
    path = tmp_path / "mixed.json"
    synthetic.write_wfcommons(tasks, path)
    doc = json.loads(path.read_text())
    assert doc["schemaVersion"] == "1.5"
    first = doc["workflow"]["execution"]["tasks"][0]
    assert first["coreCount"] == tasks[0].vcpus and first["runtimeInSeconds"] == 60
    assert first["memoryInBytes"] == tasks[0].ram_mib * MIB
    assert list(load_trace(str(path)).tasks) == tasks
    assert all(t.preempt == RELIABLE for t in load_trace(str(path), preempt_mode="none").tasks)


def test_ten_thousand_task_file_loads(tmp_path: Path) -> None:
    """A 10,000-task file loads whole; how fast is bench/plan_speed.py's to measure, not a wall-time
    bound in the suite (such bounds failed under coverage beside three workers)."""
    path = tmp_path / "big.json"
    tasks = synthetic.mixed_tasks(10_000, seed=1)
    synthetic.write_wfcommons(tasks, path)
    w = load_trace(str(path))
    assert len(w.tasks) == 10_000 and [t.id for t in w.tasks] == [t.id for t in tasks]


def test_synthetic_script(tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "synthetic.py"), "50", "--seed", "1", "-o", str(out)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert is_wfcommons_file(str(out))
    assert list(load_trace(str(out)).tasks) == synthetic.mixed_tasks(50, seed=1)
