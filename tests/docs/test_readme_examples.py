"""The README's quickstart and annotation examples (and the docs' marked examples), run as a newcomer
would copy them.

Each example's blocks run in order in one fresh directory, with `plastic` on the PATH, and what a
block shows as its output must be what it prints (tests/docs/examples.py says how outputs are
trimmed). The README cannot show output that the commands no longer print.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.examples import Block, output_matches, read_examples

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
EXAMPLES = {(page.relative_to(REPO).as_posix(), name): example
            for page in PAGES for name, example in read_examples(page).items()}


def run_block(block: Block, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "PLASTIC_HOME": str(home)}
    for name in ("PLASTIC_REDIS_URL", "COLUMNS", "LINES"):
        env.pop(name, None)
    return subprocess.run(["bash", "-euo", "pipefail", "-c", block.commands], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def test_the_readme_marks_a_quickstart_and_an_annotation_example():
    assert {("README.md", "quickstart"), ("README.md", "annotate")} <= set(EXAMPLES)
    assert all(ex.blocks for ex in EXAMPLES.values())


@pytest.mark.toil_e2e
@pytest.mark.parametrize("page, name", sorted(EXAMPLES), ids=lambda part: part)
def test_example_runs_and_prints_what_it_shows(page, name, tmp_path):
    example = EXAMPLES[page, name]
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    for block in example.blocks:
        res = run_block(block, REPO if example.in_repository else work, home)
        where = f"{page}:{block.line}"
        assert res.returncode == 0, f"{where} exited {res.returncode}\n{res.stdout}\n{res.stderr}"
        if block.output is not None:
            shown = res.stdout + res.stderr if block.with_stderr else res.stdout
            assert output_matches(block.output, shown), \
                f"{where} printed something else than it shows:\n{res.stdout}\n--- stderr:\n{res.stderr}"
