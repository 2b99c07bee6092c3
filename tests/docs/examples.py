"""Command blocks of a Markdown file that a test runs, and the output they show.

A block is marked with an HTML comment on the line before its fence, invisible where the file is read:

    <!-- example: quickstart -->
    ```sh
    plastic plan count.cwl job.yml
    ```
    <!-- output -->
    ```text
    ...
    cost:                0.1176 $/h
    ...
    ```

Every block marked `example: NAME` belongs to the example NAME; its blocks run in the order they are
written, in one shell each (bash -euo pipefail), all in the same fresh directory, or in the repository's
root when marked `example: NAME in the repository` (for commands on the repository's own files, which
they only read). An `output` block after
a command block is what that block prints on stdout (`<!-- output: stdout+stderr -->`: its stdout, then
its stderr; a terminal shows them interleaved), trimmed: a line `...` stands for any number of
lines, `...` within a line for any text, and spaces at either end of a line do not count (a table's
title is centred on the terminal's width). Everything else must match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

MARK = re.compile(r"^<!-- example: ([a-z0-9-]+)( in the repository)? -->\s*$")
OUTPUT_MARK = re.compile(r"^<!-- output(?:: (stdout|stdout\+stderr))? -->\s*$")
FENCE = re.compile(r"^```")


@dataclass
class Block:
    """One command block: where it is, its shell text, and the output it shows (None: not shown)."""

    line: int
    commands: str
    output: str | None = None
    with_stderr: bool = False


@dataclass
class Example:
    name: str
    blocks: list[Block] = field(default_factory=list)
    in_repository: bool = False


def _fenced(lines: list[str], start: int, where: str) -> tuple[str, int]:
    """The text of the fenced block opening at `start` (0-based) and the index after its closing fence."""
    if start >= len(lines) or not FENCE.match(lines[start]):
        raise ValueError(f"{where}: a marked example must be followed by a fenced block")
    end = start + 1
    while end < len(lines) and not FENCE.match(lines[end]):
        end += 1
    if end == len(lines):
        raise ValueError(f"{where}: the fenced block is not closed")
    return "\n".join(lines[start + 1:end]), end + 1


def read_examples(path: Path) -> dict[str, Example]:
    """Every marked example of the Markdown file, by name."""
    lines = path.read_text().splitlines()
    examples: dict[str, Example] = {}
    i = 0
    while i < len(lines):
        mark = MARK.match(lines[i])
        if not mark:
            i += 1
            continue
        where = f"{path.name}:{i + 1}"
        commands, i = _fenced(lines, i + 1, where)
        block = Block(line=i, commands=commands)
        output_mark = OUTPUT_MARK.match(lines[i]) if i < len(lines) else None
        if output_mark:
            block.with_stderr = output_mark.group(1) == "stdout+stderr"
            block.output, i = _fenced(lines, i + 1, f"{path.name}:{i + 1}")
        example = examples.setdefault(mark.group(1), Example(mark.group(1), in_repository=bool(mark.group(2))))
        if example.in_repository != bool(mark.group(2)):
            raise ValueError(f"{where}: the blocks of example {example.name} must all run in the same place")
        example.blocks.append(block)
    return examples


def _line_pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.strip().split("...")) + r"\Z")


def output_matches(expected: str, actual: str) -> bool:
    """Whether `actual` is what `expected` shows, with `...` lines and `...` in lines as wildcards."""
    want = expected.splitlines()
    got = [line.strip() for line in actual.splitlines()]

    def match(w: int, g: int) -> bool:
        while w < len(want):
            if want[w].strip() == "...":
                return any(match(w + 1, k) for k in range(g, len(got) + 1))
            if g >= len(got) or not _line_pattern(want[w]).match(got[g]):
                return False
            w, g = w + 1, g + 1
        return g == len(got)

    return match(0, 0)
