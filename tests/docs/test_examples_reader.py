"""The reader of marked Markdown examples and its trimmed-output matching (tests/docs/examples.py)."""

from __future__ import annotations

import pytest

from tests.docs.examples import output_matches, read_examples


def test_blocks_are_read_in_order_with_their_outputs(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("text\n<!-- example: one -->\n```sh\necho a\n```\n<!-- output -->\n```text\na\n```\n"
                  "<!-- example: one -->\n```sh\necho b\n```\n<!-- example: two -->\n```sh\ntrue\n```\n")
    examples = read_examples(md)
    assert [b.commands for b in examples["one"].blocks] == ["echo a", "echo b"]
    assert [b.output for b in examples["one"].blocks] == ["a", None]
    assert examples["two"].blocks[0].commands == "true"


def test_a_mark_without_a_block_is_an_error(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("<!-- example: one -->\nno fence\n")
    with pytest.raises(ValueError, match="x.md:1"):
        read_examples(md)


@pytest.mark.parametrize("expected, actual, ok", [
    ("a\nb", "a\nb\n", True),
    ("a\nb", "a\nc", False),
    ("a\n...\nd", "a\nb\nc\nd", True),
    ("a\n...\nd", "a\nd", True),
    ("a\n...", "a\nb", True),
    ("a\nb", "a\nb\nextra", False),
    ("cost ... USD", "cost 0.12 USD   ", True),
    ("cost ... USD", "price 0.12 USD", False),
    ("x", "", False),
])
def test_trimmed_output_matches_only_what_it_shows(expected, actual, ok):
    assert output_matches(expected, actual) is ok
