"""The documentation site builds with no warning (a broken link or anchor is one), and its command-line
reference has every option of every command; the README's links lead somewhere."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from plastic.cli.group import cli
from plastic.cli.reference import toil_options, visible_params, walk

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                         cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "WARNING" not in res.stderr, res.stderr
    return out


def test_the_site_builds_with_no_warning(site):
    assert (site / "index.html").is_file()
    assert (site / "getting-started" / "index.html").is_file()


def test_the_reference_has_every_command_and_option(site):
    text = html.unescape(re.sub(r"<[^>]+>", "", (site / "cli" / "index.html").read_text()))
    missing = []
    for path, command, ctx in walk(cli, "plastic"):
        if path not in text:
            missing.append(path)
        for param in visible_params(command, ctx):
            names = param.opts + param.secondary_opts if isinstance(param, click.Option) else [param.human_readable_name]
            missing.extend(f"{path} {name}" for name in names if name not in text)
    assert not missing, f"the command-line reference lacks {missing}"


def test_the_reference_has_every_toil_option(site):
    text = (site / "toil-batch-system" / "index.html").read_text()
    missing = [o for a in toil_options() for o in a.option_strings if o not in text]
    assert not missing, missing


def test_readme_links_lead_to_files_of_the_repository():
    readme = (REPO / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert local, "the README links to the documentation"
    missing = [t for t in local if not (REPO / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
