"""What one step of the JobBook (plastic.core.book.jobbook) decided, typed: the commands for the shell to
carry out and the records for it to keep, each in the order decided, apart."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from plastic.core.book.commands import Command
from plastic.core.book.records import Record

Output = Command | Record  # what one step of the book gives: commands to carry out, records to keep


@dataclass(frozen=True, slots=True)
class Decisions:
    commands: tuple[Command, ...] = ()
    records: tuple[Record, ...] = ()

    @classmethod
    def of(cls, outputs: Iterable[Command | Record]) -> Decisions:
        """Split the book's outputs (decided in one sequence) into commands and records."""
        commands: list[Command] = []
        records: list[Record] = []
        for out in outputs:
            (records if isinstance(out, Record) else commands).append(out)
        return cls(tuple(commands), tuple(records))

    def __bool__(self) -> bool:
        return bool(self.commands or self.records)
