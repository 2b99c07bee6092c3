"""RecordIO, the framing of Mesos' event streams: `<decimal length>\\n<record bytes>`.

A real Mesos 1.11 master sends one record per HTTP chunk, but nothing in the
protocol promises it, so the decoder accepts records split across chunks and
several records in one chunk.
"""

from __future__ import annotations

from plastic.core.errors import PlasticError

MAX_RECORD_BYTES = 64 * 1024 * 1024


class RecordIOError(PlasticError):
    """The stream is not valid RecordIO."""


def encode(record: bytes) -> bytes:
    """Frame one record."""
    return str(len(record)).encode("ascii") + b"\n" + record


class Decoder:
    """Incremental decoder: feed() bytes as they arrive, get back the complete records."""

    def __init__(self, max_record_bytes: int = MAX_RECORD_BYTES):
        self._buffer = bytearray()
        self._pending_length: int | None = None
        self._max = max_record_bytes

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer.extend(data)
        records: list[bytes] = []
        while True:
            if self._pending_length is None:
                newline = self._buffer.find(b"\n")
                if newline < 0:
                    if len(self._buffer) > 20:
                        raise RecordIOError(f"record length header too long: {bytes(self._buffer[:20])!r}")
                    break
                header = bytes(self._buffer[:newline]).strip()
                if not header.isdigit():
                    raise RecordIOError(f"bad record length header {header!r}")
                length = int(header)
                if length > self._max:
                    raise RecordIOError(f"record of {length} bytes exceeds the {self._max}-byte limit")
                del self._buffer[:newline + 1]
                self._pending_length = length
            if len(self._buffer) < self._pending_length:
                break
            records.append(bytes(self._buffer[:self._pending_length]))
            del self._buffer[:self._pending_length]
            self._pending_length = None
        return records

    @property
    def idle(self) -> bool:
        """True when no partial record is buffered."""
        return self._pending_length is None and not self._buffer
