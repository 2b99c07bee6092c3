"""plastic.store.urls: Redis URLs shown without their password."""

from __future__ import annotations

import pytest

from plastic.store.urls import has_password, is_redacted, redact


@pytest.mark.parametrize(("url", "shown"), [
    ("redis://:S3cret@host:6379/0", "redis://:****@host:6379/0"),
    ("redis://alice:S3cret@host:6379/2", "redis://alice:****@host:6379/2"),
    ("rediss://alice:p%40ss@host/0?ssl_ca_certs=/ca.pem", "rediss://alice:****@host/0?ssl_ca_certs=/ca.pem"),
    ("redis://host:6379/0?password=S3cret&db=1", "redis://host:6379/0?password=****&db=1"),
    ("redis://host:6379/0", "redis://host:6379/0"),
    ("unix:///tmp/plastic/redis.sock?db=0", "unix:///tmp/plastic/redis.sock?db=0"),
    (None, None),
])
def test_redact(url, shown):
    assert redact(url) == shown
    assert "S3cret" not in (redact(url) or "")
    assert has_password(url) == (url is not None and "@" in url)
    assert is_redacted(redact(url)) == has_password(url)

