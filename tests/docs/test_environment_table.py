"""docs/environment.md names every environment variable plastic reads (its one table of them)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NAME = re.compile(r"\bPLASTIC_[A-Z][A-Z0-9_]*[A-Z0-9]\b")
# Names in the code that are not environment variables, each with where it is and what it is.
NOT_VARIABLES = {
    "PLASTIC_NAMESPACE",      # core/planning/annotations.py: the CWL namespace's URI, a constant
    "PLASTIC_UNKNOWN_FIELD",  # cwl/glue.py: a regular expression over cwltool's messages
    "PLASTIC_BADKIND", "PLASTIC_MISSING", "PLASTIC_REJECTED", "PLASTIC_EXISTS",  # store/scripts.py: Lua errors
    "PLASTIC_REDIS_ENV",      # deploy/aws/user-data.sh.tmpl: a here-document's end marker
}


def names_in_the_code() -> set[str]:
    files = subprocess.run(["git", "ls-files", "plastic", "deploy", "toil_batch_system_plastic.py", "Makefile",
                            "docker-compose.yml", "tests/conftest.py", "tests/compose/conftest.py"],
                           cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    found: set[str] = set()
    for name in files:
        path = REPO / name
        if path.is_file() and path.suffix not in {".png", ".gz"}:
            found |= set(NAME.findall(path.read_text(errors="replace")))
    return found - NOT_VARIABLES


def test_every_variable_the_code_reads_is_in_the_table():
    table = (REPO / "docs" / "environment.md").read_text()
    documented = set(re.findall(r"^\| `(PLASTIC_[A-Z0-9_]+)`", table, re.M))
    documented |= set(re.findall(r"\(also `(PLASTIC_[A-Z0-9_]+)`\)", table))
    missing = names_in_the_code() - documented
    assert not missing, f"docs/environment.md lacks {sorted(missing)}"
    stale = documented - names_in_the_code()
    assert not stale, f"docs/environment.md names variables nothing reads: {sorted(stale)}"
