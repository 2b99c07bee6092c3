"""`plastic --help` and each group's: every command's summary is a whole sentence, never cut short with
"..." (click cuts a summary it makes from the docstring; each command gives its own, short_help)."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from plastic.cli.group import cli
from tests.clirun import plastic

GROUPS = [(), ("local",), ("cloud",), ("imds",)]


def summaries(help_text: str) -> dict[str, str]:
    """Command name -> its summary as --help lists it (the wrapped lines joined)."""
    found: dict[str, list[str]] = {}
    last = None
    for line in help_text.split("Commands:\n", 1)[1].splitlines():
        if line.startswith("  ") and not line.startswith("   "):  # a command's first line
            last, _, text = line.strip().partition(" ")
            found[last] = [text.strip()]
        elif line.strip() and last is not None:  # its summary, wrapped
            found[last].append(line.strip())
    return {name: " ".join(words) for name, words in found.items()}


def group_of(path: tuple[str, ...]) -> click.Group:
    group = cli
    for name in path:
        group = group.get_command(None, name)  # type: ignore[arg-type, assignment]
    return group


@pytest.mark.parametrize("columns", ["80", "60"])
@pytest.mark.parametrize("path", GROUPS)
def test_every_summary_is_a_whole_sentence(path, columns):
    res = CliRunner().invoke(cli, [*path, "--help"], terminal_width=int(columns))  # CliRunner's own width: 80
    assert res.exit_code == 0, res.output
    listed = summaries(res.output)
    group = group_of(path)
    shown = {n for n in group.list_commands(None) if not group.get_command(None, n).hidden}  # type: ignore[arg-type, union-attr]
    assert set(listed) == shown
    for name, summary in listed.items():
        command = group.get_command(None, name)  # type: ignore[arg-type]
        assert summary == " ".join(command.short_help.split()), (name, summary)
        assert summary.endswith(".") and not summary.endswith("..."), (name, summary)
    assert all(len(line) <= int(columns) for line in res.output.splitlines()), res.output


def test_every_command_has_its_own_summary():
    def walk(group: click.Group):
        for name in group.list_commands(None):  # type: ignore[arg-type]
            command = group.get_command(None, name)  # type: ignore[arg-type]
            yield name, command
            if isinstance(command, click.Group):
                yield from walk(command)

    for name, command in walk(cli):
        assert command.short_help and command.short_help.strip().endswith("."), name


def test_plastic_help_at_80_columns_as_a_user_sees_it():
    res = plastic("--help", env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    assert "..." not in res.stdout.split("Commands:", 1)[1]
    assert "Size the hybrid cloud for a workflow or a trace." in res.stdout
