"""The EC2 instance metadata service (IMDS) as a spot watcher needs it: IMDSv2 with a v1 fallback.

    PUT /latest/api/token (X-aws-ec2-metadata-token-ttl-seconds: TTL)  -> a session token
    GET /latest/meta-data/PATH (X-aws-ec2-metadata-token: TOKEN)       -> 200 text | 404 nothing there

The token is taken again before it expires (and at once after a 401).  As the AWS SDKs do, a
token request answered 403, 404 or 405 (IMDSv2 not available there) falls back to IMDSv1 (GETs
without a token), and v2 is tried again every few minutes or as soon as a GET says 401.  Every
other failure (no answer, a timeout, 5xx) is an `ImdsError` for the caller to retry.

The two documents a spot watcher reads, parsed by pure functions:

    spot/instance-action                  {"action": "terminate"|"stop"|"hibernate", "time": ISO-8601}
    events/recommendations/rebalance      {"noticeTime": ISO-8601}
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from plastic.core.book.spot_events import INTERRUPTION_NOTICE_S, parse_time

log = logging.getLogger(__name__)

DEFAULT_URL = "http://169.254.169.254"
TOKEN_PATH = "/latest/api/token"
META_PREFIX = "/latest/meta-data/"
TTL_HEADER = "X-aws-ec2-metadata-token-ttl-seconds"
TOKEN_HEADER = "X-aws-ec2-metadata-token"
MAX_TOKEN_TTL_S = 21600
FALLBACK_STATUSES = frozenset({403, 404, 405})
V2_RETRY_S = 300.0  # in v1 fallback, try for a token again this often


class ImdsError(Exception):
    """IMDS did not answer usefully (unreachable, timeout, an unexpected status): retry later."""


# ------------------------------------------------------------------ pure parsing


def _time(text: str) -> float:
    """An ISO-8601 time (plastic.core.book.spot_events.parse_time) -> epoch seconds; ValueError if it is none."""
    when = parse_time(text)
    if when is None:
        raise ValueError(f"not a time: {text!r}")
    return when


@dataclass(frozen=True, slots=True)
class InstanceAction:
    action: str  # terminate | stop | hibernate (or "unknown" when the document could not be read)
    time: float  # epoch seconds
    readable: bool = True


def parse_instance_action(body: str, now: float) -> InstanceAction:
    """The spot/instance-action document.  Its presence is the notice: an unreadable one still counts,
    with AWS's two minutes from `now`."""
    try:
        doc = json.loads(body)
        return InstanceAction(str(doc["action"]).lower(), _time(str(doc["time"])))
    except (ValueError, KeyError, TypeError):
        return InstanceAction("unknown", now + INTERRUPTION_NOTICE_S, readable=False)


def parse_rebalance(body: str, now: float) -> float:
    """The rebalance recommendation's noticeTime (epoch seconds); `now` when it cannot be read."""
    try:
        return _time(str(json.loads(body)["noticeTime"]))
    except (ValueError, KeyError, TypeError):
        return now


# ------------------------------------------------------------------ the client


class ImdsClient:
    """One instance's metadata service (see the module docstring).  Not thread-safe."""

    def __init__(self, base_url: str = DEFAULT_URL, *, token_ttl_s: int = MAX_TOKEN_TTL_S, timeout_s: float = 2.0,
                 clock: Callable[[], float] = time.monotonic, transport: httpx.BaseTransport | None = None):
        if not 1 <= token_ttl_s <= MAX_TOKEN_TTL_S:
            raise ValueError(f"token TTL must be 1..{MAX_TOKEN_TTL_S} s, got {token_ttl_s}")
        self.base_url = base_url.rstrip("/")
        self.token_ttl_s = token_ttl_s
        self.clock = clock
        # trust_env=False: never through an HTTP proxy from the environment (IMDS is link-local)
        self.http = httpx.Client(base_url=self.base_url, timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 1.0)),
                                 trust_env=False, transport=transport)
        self.token: str | None = None
        self.token_expires = 0.0
        self.v1_since: float | None = None  # set while in the IMDSv1 fallback

    def close(self) -> None:
        self.http.close()

    # ------------------------------------------------------------ tokens

    def _refresh_margin(self) -> float:
        return max(1.0, min(60.0, self.token_ttl_s * 0.1))

    def _token(self) -> str | None:
        now = self.clock()
        if self.v1_since is not None and now - self.v1_since < V2_RETRY_S:
            return None
        if self.token is not None and now < self.token_expires - self._refresh_margin():
            return self.token
        try:
            resp = self.http.put(TOKEN_PATH, headers={TTL_HEADER: str(self.token_ttl_s)})
        except httpx.HTTPError as exc:
            raise ImdsError(f"token request to {self.base_url} failed: {exc or type(exc).__name__}") from None
        if resp.status_code == 200 and resp.text.strip():
            ttl = _int(resp.headers.get(TTL_HEADER)) or self.token_ttl_s
            self.token, self.token_expires = resp.text.strip(), now + ttl
            if self.v1_since is not None:
                log.info("IMDSv2 tokens work again at %s", self.base_url)
            self.v1_since = None
            return self.token
        if resp.status_code in FALLBACK_STATUSES:
            if self.v1_since is None:
                log.warning("IMDS at %s refused a v2 token (HTTP %d); falling back to IMDSv1", self.base_url,
                            resp.status_code)
            self.v1_since, self.token = now, None
            return None
        raise ImdsError(f"token request to {self.base_url}: HTTP {resp.status_code}")

    # ------------------------------------------------------------ reads

    def get(self, path: str) -> str | None:
        """The text at meta-data/PATH, or None when there is nothing (404)."""
        for attempt in (1, 2):
            token = self._token()
            try:
                resp = self.http.get(META_PREFIX + path.lstrip("/"), headers={TOKEN_HEADER: token} if token else {})
            except httpx.HTTPError as exc:
                raise ImdsError(f"GET {path} from {self.base_url} failed: {exc or type(exc).__name__}") from None
            if resp.status_code == 200:
                return resp.text
            if resp.status_code == 404:
                return None
            if resp.status_code == 401 and attempt == 1:  # token expired or revoked, or v2 required after all
                self.token, self.v1_since = None, None
                continue
            raise ImdsError(f"GET {path} from {self.base_url}: HTTP {resp.status_code}")
        raise AssertionError("unreachable")

    def instance_id(self) -> str | None:
        text = self.get("instance-id")
        return text.strip() or None if text is not None else None

    def instance_action(self, now: float) -> InstanceAction | None:
        body = self.get("spot/instance-action")
        return None if body is None else parse_instance_action(body, now)

    def rebalance(self, now: float) -> float | None:
        body = self.get("events/recommendations/rebalance")
        return None if body is None else parse_rebalance(body, now)


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None
