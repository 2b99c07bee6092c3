"""Credential files: the framework's (JSON or PRINCIPAL SECRET) and the master's list; bad files
are one InputError naming the file, never showing the secret."""

from __future__ import annotations

import base64
import json

import pytest

from plastic.core.errors import InputError
from plastic.mesos.credential import (
    Credential,
    authenticated_principal,
    read_credential,
    read_credentials,
)


def _write(tmp_path, text: str, name: str = "cred"):
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_json_and_text_forms(tmp_path):
    assert read_credential(_write(tmp_path, '{"principal": "p", "secret": "s e"}')) == Credential("p", "s e")
    assert read_credential(_write(tmp_path, "# mine\n  p   s3  \n")) == Credential("p", "s3")


def test_the_secret_is_not_in_the_repr():
    assert "s3cret" not in repr(Credential("p", "s3cret"))


@pytest.mark.parametrize(("text", "says"), [
    ("", "found 0"),
    ("p\n", "two words"),
    ("p s extra\n", "two words"),
    ("a b\nc d\n", "found 2"),
    ('{"principal": "p"', "not valid JSON"),
    ('{"principal": "p"}', "'secret' must be"),
    ('{"principal": "", "secret": "x"}', "'principal' must be"),
    ('{"principal": "a:b", "secret": "x"}', "cannot contain ':'"),
    ('{"principal": "p", "secret": "x", "role": "r"}', "unknown key 'role'"),
    ('["p", "x"]', "an object"),
])
def test_bad_framework_credentials(tmp_path, text, says):
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_credential(path)
    assert str(path) in str(err.value) and says in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_credential(tmp_path / "nope")
    with pytest.raises(InputError, match="is a directory"):
        read_credential(tmp_path)


def test_a_secret_in_a_bad_file_is_not_repeated(tmp_path):
    path = _write(tmp_path, '{"principal": "p", "secret": "TOPSECRET", "extra": 1}')
    with pytest.raises(InputError) as err:
        read_credential(path)
    assert "TOPSECRET" not in str(err.value)


def test_a_file_others_can_read_is_warned_about(tmp_path, caplog):
    path = _write(tmp_path, "p s\n")
    path.chmod(0o644)
    with caplog.at_level("WARNING"):
        read_credential(path)
    assert "chmod 600" in caplog.text


def test_the_masters_list(tmp_path):
    doc = {"credentials": [{"principal": "a", "secret": "1"}, {"principal": "b", "secret": "2"}]}
    assert read_credentials(_write(tmp_path, json.dumps(doc))) == (Credential("a", "1"), Credential("b", "2"))
    assert read_credentials(_write(tmp_path, "a 1\n\nb 2\n")) == (Credential("a", "1"), Credential("b", "2"))
    with pytest.raises(InputError, match=r"credentials\[1\]"):
        read_credentials(_write(tmp_path, json.dumps({"credentials": [{"principal": "a", "secret": "1"}, {}]})))
    with pytest.raises(InputError, match="no credentials"):
        read_credentials(_write(tmp_path, "# nothing\n"))
    with pytest.raises(InputError, match="expected"):
        read_credentials(_write(tmp_path, '{"creds": []}'))


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_authenticated_principal():
    accepted = (Credential("a", "1"), Credential("b", "pass:with:colons"))
    assert authenticated_principal(_basic("a", "1"), accepted) == "a"
    assert authenticated_principal(_basic("b", "pass:with:colons"), accepted) == "b"
    assert authenticated_principal(Credential("a", "1").authorization(), accepted) == "a"
    for header in (None, "", _basic("a", "2"), _basic("c", "1"), "Bearer x", "Basic !!!", "Basic " +
                   base64.b64encode(b"nocolon").decode()):
        assert authenticated_principal(header, accepted) is None
