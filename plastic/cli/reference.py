"""The command-line reference in Markdown, made from the commands themselves so it cannot drift.

`command_reference()` walks the `plastic` group (every command, every subcommand) and writes, per
command, its help, its usage line and a table of its arguments and options: the flags, what it
takes, its default and the environment variables it reads. `toil_option_reference()` does the same
for the options the Toil batch system adds to toil-cwl-runner.  The documentation site calls both
when it is built (docs/_hooks/reference.py); tests/docs checks that every option is there.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import click

ENV_MENTION = re.compile(r"\$(PLASTIC_[A-Z_]+)")


def command_reference(root: click.Group | None = None, prog: str = "plastic") -> str:
    """Markdown for `prog` and every command under it, depth first, in alphabetical order."""
    if root is None:
        from plastic.cli.group import cli as root
    parts: list[str] = []
    for path, command, ctx in walk(root, prog):
        parts.append(_command_section(path, command, ctx))
    return "\n".join(parts)


def walk(command: click.Command, path: str,
         parent: click.Context | None = None) -> Iterator[tuple[str, click.Command, click.Context]]:
    """(command path, command, its context) for `command` and every visible command below it."""
    ctx = click.Context(command, info_name=path.rsplit(" ", 1)[-1], parent=parent)
    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from walk(sub, f"{path} {name}", ctx)


def visible_params(command: click.Command, ctx: click.Context) -> list[click.Parameter]:
    """The arguments and options a user sees (no hidden alias), --help included."""
    return [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]


def _command_section(path: str, command: click.Command, ctx: click.Context) -> str:
    level = "#" * min(2 + path.count(" "), 4)
    lines = [f"{level} `{path}`", ""]
    lines += [_clean_help(command.help or command.short_help or ""), ""]
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines += ["```text", f"{path} {usage}".rstrip(), "```", ""]
    if isinstance(command, click.Group):
        names = [n for n in command.list_commands(ctx) if not command.get_command(ctx, n).hidden]
        lines += ["Commands: " + ", ".join(f"`{path} {n}`" for n in names) + ".", ""]
    rows = [_param_row(p, ctx) for p in visible_params(command, ctx)]
    if rows:
        lines += ["| argument or option | takes | default | environment | meaning |", "|---|---|---|---|---|"]
        lines += rows
        lines.append("")
    return "\n".join(lines)


def _param_row(param: click.Parameter, ctx: click.Context) -> str:
    if isinstance(param, click.Argument):
        flags = f"`{param.make_metavar(ctx)}`" + ("" if param.required else " (optional)")
        meaning = ""
    else:
        names = [*param.opts, *param.secondary_opts]
        flags = ", ".join(f"`{n}`" for n in names)
        meaning = getattr(param, "help", None) or ""
    return "| " + " | ".join(_cell(c) for c in (
        flags, _takes(param, ctx), _default(param), _environment(param, meaning), _clean_help(meaning))) + " |"


def _takes(param: click.Parameter, ctx: click.Context) -> str:
    if isinstance(param, click.Option) and (param.is_flag or param.count):
        return "flag" if not param.count else "count (repeat it)"
    if isinstance(param.type, click.Choice):
        return " / ".join(f"`{c}`" for c in param.type.choices)
    many = " (repeatable)" if getattr(param, "multiple", False) else ""
    if isinstance(param, click.Option) and param.metavar:
        return f"`{param.metavar}`{many}"
    own = param.type.get_metavar(param, ctx)  # a type of plastic's (Seconds) names itself
    if isinstance(param.type, click.IntRange | click.FloatRange):
        kind = own or ("INTEGER" if isinstance(param.type, click.IntRange) else "NUMBER")
        return f"`{kind}` ({param.type._describe_range()}){many}"
    if own:
        return f"`{own}`{many}"
    if isinstance(param.type, click.Path):
        return f"`{'DIRECTORY' if not param.type.file_okay else 'FILE' if not param.type.dir_okay else 'PATH'}`{many}"
    return f"`{param.type.name.upper()}`{many}"


def _default(param: click.Parameter) -> str:
    default = param.default
    if callable(default) or default is None or default is False or default == () or \
            type(default).__name__ == "Sentinel":
        return ""
    if isinstance(default, bool | int | float | str):
        return f"`{default}`" if str(default) != "" else ""
    return f"`{default!r}`"


def _environment(param: click.Parameter, help_text: str) -> str:
    names = []
    envvar = getattr(param, "envvar", None)
    if isinstance(envvar, str):
        names.append(envvar)
    elif envvar:
        names.extend(envvar)
    names.extend(n for n in ENV_MENTION.findall(help_text) if n not in names)
    return ", ".join(f"`{n}`" for n in names)


def _clean_help(text: str) -> str:
    """Click's help text as Markdown: `\\b` markers gone, paragraphs kept, lines joined."""
    paragraphs = [" ".join(line.strip() for line in block.replace("\b", "").splitlines() if line.strip())
                  for block in re.split(r"\n\s*\n", text.strip())]
    return "\n\n".join(p for p in paragraphs if p)


def _cell(text: str) -> str:
    return text.replace("|", "&#124;").replace("\n\n", "<br>").replace("\n", " ")


def toil_options() -> list[argparse.Action]:
    """The options `--batchSystem plastic` adds to toil-cwl-runner, as argparse declares them."""
    from plastic.framework.toil_options import add_options

    parser = argparse.ArgumentParser(add_help=False)
    add_options(parser)
    return list(parser._actions)


def toil_option_reference() -> str:
    """Markdown table of the options `--batchSystem plastic` adds to toil-cwl-runner."""
    # defaults are in each help text: the parser's own are read from this process's environment
    lines = ["| option | takes | environment | meaning |", "|---|---|---|---|"]
    for action in toil_options():
        help_text = action.help or ""
        env = ", ".join(f"`{n}`" for n in dict.fromkeys(ENV_MENTION.findall(help_text)))
        lines.append("| " + " | ".join(_cell(c) for c in (
            ", ".join(f"`{o}`" for o in action.option_strings), _action_takes(action), env, help_text)) + " |")
    return "\n".join(lines) + "\n"


def _action_takes(action: argparse.Action) -> str:
    if action.choices:
        return " / ".join(f"`{c}`" for c in action.choices)
    if action.metavar:
        return f"`{action.metavar}`"
    kind = getattr(action.type, "__name__", "")
    named = {"float": "NUMBER", "int": "INTEGER", "seconds_or_off": "SECONDS", "policy_file": "FILE"}
    return f"`{named.get(kind, 'TEXT')}`"
