"""Reading annotated CWL through cwltool's loader."""

from __future__ import annotations

import os


def document_file(reference: str | os.PathLike[str]) -> str:
    """The file a CWL reference names: `wf.cwl#main` is the process `main` of `wf.cwl` (a `$graph`
    document), as cwltool reads it; what follows the first `#` is never part of the file's name."""
    return os.fspath(reference).partition("#")[0]


def document_uri(reference: str | os.PathLike[str]) -> str:
    """The `file://` URI cwltool loads a CWL reference by, its `#ID` kept."""
    from schema_salad.ref_resolver import file_uri

    _, hash_mark, fragment = os.fspath(reference).partition("#")
    return file_uri(os.path.abspath(document_file(reference))) + (hash_mark + fragment if fragment else "")
