"""plastic.fileio.write_atomically: whole files only, with the modes the umask gives a new file."""

from __future__ import annotations

import os
import stat

import pytest

from plastic.fileio import write_atomically


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_the_file_gets_the_umasks_mode(tmp_path, umask, mode):
    before = os.umask(umask)
    try:
        write_atomically(str(tmp_path / "report.html"), "<html></html>\n")
    finally:
        os.umask(before)
    assert (tmp_path / "report.html").read_text() == "<html></html>\n"
    assert stat.S_IMODE((tmp_path / "report.html").stat().st_mode) == mode
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary file left
