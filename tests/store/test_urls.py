"""plastic.store.urls: Redis URLs shown without their password."""

from __future__ import annotations

import pytest

from plastic.core.errors import InputError
from plastic.store.urls import check_url, has_password, is_redacted, redact, with_ca


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


def test_with_ca_puts_the_ca_file_in_a_rediss_url(tmp_path):
    ca = tmp_path / "my ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    url = with_ca("rediss://alice:S3cret@host:6380/0?ssl_ca_certs=/old.pem", ca)
    assert url == f"rediss://alice:S3cret@host:6380/0?ssl_ca_certs={tmp_path}/my%20ca.pem"
    assert check_url(url) == url
    from redis.connection import parse_url

    # what redis-py makes of it: the CA file, for the TLS connection
    assert parse_url(url)["ssl_ca_certs"] == str(ca) and parse_url(url)["username"] == "alice"
    assert with_ca("rediss://host/0", None) == "rediss://host/0"


@pytest.mark.parametrize(("url", "ca", "needles"), [
    ("redis://host/0", "CA", ("--redis-ca", "rediss://", "redis://host/0")),
    (None, "CA", ("--redis-ca", "the embedded Redis")),
    ("rediss://:S3cret@host/0", "missing.pem", ("--redis-ca", "missing.pem", "cannot read")),
])
def test_with_ca_errors(tmp_path, url, ca, needles):
    (tmp_path / "CA").write_text("x")
    with pytest.raises(InputError) as info:
        with_ca(url, tmp_path / ca)
    assert all(n in str(info.value) for n in needles) and "S3cret" not in str(info.value)


@pytest.mark.parametrize(("url", "needle"), [
    ("http://:S3cret@host/0", "not a Redis URL: http://:****@host/0"),
    ("redis://host:port/0", "not a Redis URL"),
    ("redis://host/0?ssl_ca_certs=/etc/hostname", "goes with a rediss://"),
    ("rediss://host/0?ssl_ca_certs=/no/such/ca.pem", "/no/such/ca.pem: --redis-ca: cannot read the CA file"),
])
def test_check_url_errors(url, needle):
    with pytest.raises(InputError, match=needle.replace("*", r"\*").replace("?", r"\?")) as info:
        check_url(url)
    assert "S3cret" not in str(info.value)
