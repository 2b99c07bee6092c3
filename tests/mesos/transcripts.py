"""Readers of the real Mesos 1.11.1 wire transcripts in tests/data/mesos-1.11-transcripts/ (or the folder
PLASTIC_MESOS_TRANSCRIPTS names)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from tests.data_paths import MESOS_TRANSCRIPTS
from tests.data_paths import require as require_data

TRANSCRIPTS = Path(os.environ.get("PLASTIC_MESOS_TRANSCRIPTS", MESOS_TRANSCRIPTS))

_MARKER = re.compile(rb"#\[t=([0-9.]+)s since request, (\d+) bytes\]\n")


def require() -> Path:
    return require_data(TRANSCRIPTS)


@dataclass
class Exchange:
    request_line: str
    request_headers: dict[str, str]
    request_body: bytes
    response_status: int
    response_headers: dict[str, str]
    response_body: bytes

    @property
    def request_json(self) -> dict:
        return json.loads(self.request_body)


def _split_head(raw: bytes) -> tuple[str, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return lines[0], headers, body


def _request_part(text: bytes) -> bytes:
    start = text.index(b"===== REQUEST (exact bytes) =====\n") + len(b"===== REQUEST (exact bytes) =====\n")
    end = text.index(b"\n===== RESPONSE", start)
    return text[start:end]


def exchange(name: str) -> Exchange:
    """One request/response file (NN_*.txt, not a stream)."""
    text = (require() / name).read_bytes()
    request_line, request_headers, request_body = _split_head(_request_part(text))
    response_raw = text[text.index(b"=====\n", text.index(b"===== RESPONSE")) + len(b"=====\n"):]
    status_line, response_headers, response_body = _split_head(response_raw)
    length = int(response_headers.get("content-length", len(response_body)))
    return Exchange(
        request_line,
        request_headers,
        request_body,
        int(status_line.split()[1]),
        response_headers,
        response_body[:length],
    )


@dataclass
class Stream:
    request: bytes  # exact request bytes
    reads: list[tuple[float, bytes]]  # (seconds since request, bytes of one recv())
    eof: bool  # the recording ended with the server closing the connection

    @property
    def wire(self) -> bytes:
        return b"".join(data for _, data in self.reads)


def stream(name: str) -> Stream:
    """A SUBSCRIBE stream file: the exact bytes of each recv(), with their times."""
    text = (require() / name).read_bytes()
    request = _request_part(text)
    reads: list[tuple[float, bytes]] = []
    eof = False
    pos = text.index(b"===== RESPONSE")
    while True:
        m = _MARKER.search(text, pos)
        if not m:
            break
        n = int(m.group(2))
        data = text[m.end(): m.end() + n]
        pos = m.end() + n
        if data == b"<<EOF>>":
            eof = True
            break
        reads.append((float(m.group(1)), data))
    return Stream(request, reads, eof)


def events(name: str) -> list[dict]:
    """The decoded events recorded next to a stream (*.events.jsonl)."""
    out = []
    for line in (require() / name).read_text().splitlines():
        if line.strip():
            out.append(json.loads(line)["event"])
    return out


def dechunk(body: bytes) -> list[bytes]:
    """Chunk payloads of an HTTP/1.1 chunked body (a plain reference parser for the tests)."""
    chunks = []
    pos = 0
    while pos < len(body):
        eol = body.index(b"\r\n", pos)
        size = int(body[pos:eol].split(b";")[0], 16)
        pos = eol + 2
        if size == 0:
            break
        chunks.append(body[pos: pos + size])
        pos += size + 2
    return chunks
