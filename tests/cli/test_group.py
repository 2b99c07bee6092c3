"""The `plastic` group loads each command when it is asked for: every command is there, named as
listed, and `plastic plan` does not import what the other commands need."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from plastic.cli.group import COMMANDS, cli

REPO = Path(__file__).resolve().parents[2]


def test_every_command_loads_under_its_name_and_help_lists_them_all():
    for name in COMMANDS:
        command = cli.get_command(None, name)
        assert command is not None and command.name == name
    assert cli.get_command(None, "no-such-command") is None
    res = CliRunner().invoke(cli, ["--help"])
    assert res.exit_code == 0
    listed = {line.split()[0] for line in res.output.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(COMMANDS)


def test_plan_imports_neither_the_local_cluster_nor_the_cloud_nor_the_service():
    trace = REPO / "tests" / "cli" / "data" / "tiny-trace.json"  # the tests' own five-task trace: a quick plan
    probe = ("import sys\nfrom plastic.cli.group import cli\n"
             f"try:\n    cli(['plan', {str(trace)!r}, '--format', 'json'], standalone_mode=False)\n"
             "finally:\n    print(sorted(m for m in sys.modules if m.startswith('plastic.')), file=sys.stderr)\n")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120,
                         check=False)
    assert res.returncode == 0, res.stderr
    loaded = res.stderr.strip().splitlines()[-1]
    assert "plastic.cli.plan" in loaded
    for heavy in ("plastic.cli.local", "plastic.cli.cloud", "plastic.cli.service", "plastic.cli.run",
                  "plastic.local", "plastic.compose", "plastic.aws"):
        assert f"'{heavy}'" not in loaded, heavy
