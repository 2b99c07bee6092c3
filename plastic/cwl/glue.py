"""The glue between plastic and cwltool.

* registers `plastic:Plasticity` with cwltool the way cwltool registers its
  own extensions (`cwltool.process.use_custom_schema` plus
  `cwltool.process.supportedProcessRequirements`), so the class is valid under
  `requirements:` as well as under `hints:`;
* keeps cwltool and schema-salad quiet unless plastic runs with -v;
* loads a document into a cwltool `Process`;
* turns cwltool's and schema-salad's multi-line errors into one-line
  `WorkflowError`s.

cwltool is imported lazily by the callers of this module (plastic.cwl.loader),
never at plastic's start-up.
"""

from __future__ import annotations

import json
import logging
import os
import re
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager

from cwltool.context import LoadingContext
from cwltool.process import Process
from schema_salad.exceptions import SchemaSaladException

from plastic.core.errors import AnnotationError, WorkflowError
from plastic.core.planning.annotations import PLASTIC_NAMESPACE, PLASTICITY_CLASS
from plastic.cwl import document_file, document_uri

log = logging.getLogger(__name__)

#: The name under which the extension schema is handed to cwltool.
SCHEMA_NAME = "https://w3id.org/plastic/cwl-extension.yml"
#: The CWL versions plastic reads.
CWL_VERSIONS = ("v1.0", "v1.1", "v1.2")

_LOOSE = ["null", "Any"]  # value checks are plastic's (parse_plasticity), not schema-salad's


def _schema_text() -> str:
    schema = {
        "$base": PLASTIC_NAMESPACE,
        "$namespaces": {"cwl": "https://w3id.org/cwl/cwl#", "plastic": PLASTIC_NAMESPACE},
        "$graph": [
            {"$import": "https://w3id.org/cwl/CommonWorkflowLanguage.yml"},
            {
                "name": "Plasticity",
                "type": "record",
                "inVocab": False,
                "extends": "cwl:ProcessRequirement",
                "doc": "How a step may be placed on a hybrid cloud of on-demand and spot nodes.",
                "fields": [
                    {"name": "class", "type": "string",
                     "jsonldPredicate": {"_id": "@type", "_type": "@vocab"}},
                    {"name": "vcpus", "type": _LOOSE, "doc": "Whole vCPUs (int >= 1)."},
                    {"name": "vram", "type": _LOOSE, "doc": "MiB of RAM (int >= 1)."},
                    {"name": "preempt", "type": _LOOSE,
                     "doc": "true, false, or N >= 0 preemptions before moving to on-demand."},
                    {"name": "instanceType", "type": _LOOSE, "doc": "Pin an instance type."},
                ],
            },
        ],
    }
    return json.dumps(schema)


_SCHEMA_TEXT = _schema_text()


def ensure_extension_registered() -> None:
    """Make cwltool accept `plastic:Plasticity` under `hints:` and `requirements:`.

    Idempotent; called before every load because cwltool's own main() resets
    custom schemas when it runs in the same process.
    """
    from cwltool import process
    from cwltool.update import INTERNAL_VERSION

    # INTERNAL_VERSION too: documents reached through `run:` are validated after
    # cwltool has updated them to its internal version.
    for version in (*CWL_VERSIONS, INTERNAL_VERSION):
        if process.custom_schemas.get(version) != (SCHEMA_NAME, _SCHEMA_TEXT):
            process.use_custom_schema(version, SCHEMA_NAME, _SCHEMA_TEXT)
    if PLASTICITY_CLASS not in process.supportedProcessRequirements:
        process.supportedProcessRequirements.append(PLASTICITY_CLASS)


_NOISY_LOGGERS = ("cwltool", "cwltool.validation_warnings", "salad", "cwl_utils", "rdflib")


@contextmanager
def quiet_cwltool() -> Iterator[None]:
    """Silence cwltool and schema-salad while loading, unless plastic runs with -v.

    -v shows cwltool's messages (through plastic's handler, once); schema-salad
    logs tracebacks for some errors, so it speaks only with -vv.
    """
    plastic = logging.getLogger("plastic")
    if plastic.isEnabledFor(logging.DEBUG):
        silenced: tuple[str, ...] = ()
    elif plastic.isEnabledFor(logging.INFO):
        silenced = ("salad",)
    else:
        silenced = _NOISY_LOGGERS
    saved = {name: logging.getLogger(name).level for name in silenced}
    for name in silenced:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    cwl_logger = logging.getLogger("cwltool")
    removed = None
    if "cwltool" not in silenced and logging.getLogger().handlers:
        from cwltool.loghandler import defaultStreamHandler

        if defaultStreamHandler in cwl_logger.handlers:
            cwl_logger.removeHandler(defaultStreamHandler)  # plastic's root handler prints it
            removed = defaultStreamHandler
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)
        if removed is not None and removed not in cwl_logger.handlers:
            cwl_logger.addHandler(removed)


def new_loading_context() -> LoadingContext:
    from cwltool.workflow import default_make_tool

    lc = LoadingContext()
    lc.construct_tool_object = default_make_tool
    lc.disable_js_validation = True  # expressions are checked when plastic evaluates them
    return lc


def display_path(location: str) -> str:
    """A file URI or path as the user would type it: relative under the cwd, else absolute."""
    path = location
    if location.startswith("file://"):
        path = urllib.parse.unquote(urllib.parse.urlsplit(location).path)
    absolute = os.path.abspath(document_file(path))
    cwd = os.getcwd()
    if absolute == cwd or absolute.startswith(cwd + os.sep):
        return os.path.relpath(absolute, cwd)
    return absolute


def load_process(path: str) -> Process:
    """Load, validate and update a CWL document with cwltool."""
    from cwltool.load_tool import load_tool

    file_part = document_file(path)  # "packed.cwl#tool" picks one process
    if not os.path.exists(file_part):
        raise WorkflowError("no such file", source=path, field="file")
    if os.path.isdir(file_part):
        raise WorkflowError("is a directory, not a CWL document", source=path, field="file")
    ensure_extension_registered()
    try:
        return load_tool(document_uri(path), new_loading_context())
    except StopIteration:
        raise WorkflowError("empty document", source=path, field="document") from None
    except Exception as exc:  # noqa: BLE001 - cwltool raises many kinds; all mean "bad document"
        raise to_workflow_error(exc, default_source=path) from exc


# --- one-line errors -------------------------------------------------------------------------

_LOCATION = re.compile(r"^(?P<file>[^\s:][^:]*?):(?P<line>\d+):(?P<col>\d+):\s?(?P<rest>.*)$")
_FIELD_PATTERNS = (
    re.compile(r"invalid field '([^']+)'"),
    re.compile(r"[Ff]ield '([^']+)'"),
    re.compile(r"checking field '([^']+)'"),
    re.compile(r"the '([^']+)' field is not valid"),
    re.compile(r"Validation error in field (\w+)"),
    re.compile(r"[Ii]nput parameter '([^']+)'"),
    re.compile(r"missing required field '([^']+)'"),
    re.compile(r"^the `([^`]+)` field is not valid"),
)
_MAX_MESSAGE = 300
# schema-salad's complaint about a field of plastic:Plasticity that does not exist
_PLASTIC_UNKNOWN_FIELD = re.compile(
    r"invalid field '([^']+)', expected one of: 'class', 'vcpus', 'vram', 'preempt',\s+'instanceType'")
_JS_ERROR = re.compile(r"\b((?:Type|Reference|Syntax|Range|Eval|URI)?Error): (.+?)(?:'$|$)", re.MULTILINE)


_MISSING_REF = re.compile(r"(?:Field '\w+' )?contains undefined reference to '(file://[^']+)'")
_MISSING_FILE = re.compile(r"\[Errno 2\] No such file or directory: '([^']+)'")
_YAML_ERROR = re.compile(r"^\S*:?\d*:?\d*:?\s*while (parsing|scanning)|mapping values are not allowed|"
                         r"found character that cannot start|could not find expected", re.MULTILINE)


def _missing_file(m: re.Match[str]) -> str:
    uri = m.group(1)
    path = urllib.parse.unquote(urllib.parse.urlsplit(uri).path)
    if not os.path.exists(path):
        return f"file not found: {display_path(path)}"
    return m.group(0)


def expression_error(text: str) -> str | None:
    """The useful line of a failed CWL expression (the JavaScript error, or the reference error)."""
    body = "\n".join(_LOCATION.sub(lambda m: m.group("rest"), line.strip()) for line in text.splitlines())
    m = _JS_ERROR.search(body)
    if m and "script was:" in body:
        script = re.search(r"^\d\d (\(function\(\)\{.*)$", body, re.MULTILINE)
        expr = ""
        if script:
            code = script.group(1)
            inner = re.fullmatch(r"\(function\(\)\{return \(\((.*)\)\);\}\)\(\)", code)
            expr = f" in `$({inner.group(1)})`" if inner else f" in `{code}`"
        return f"expression failed{expr}: {m.group(1)}: {m.group(2).strip()}"
    m = re.search(r"(Syntax error in parameter reference '[^\n]*?'\.)", body)
    if m:
        return m.group(1)
    return None


def _field_in(message: str) -> str | None:
    for pattern in _FIELD_PATTERNS:
        m = pattern.search(message)
        if m:
            return m.group(1)
    return None


def _squash(text: str) -> str:
    """Collapse the lines of a message into one, dropping location prefixes and noise."""
    parts = []
    for raw in str(text).splitlines():
        line = raw.strip()
        m = _LOCATION.match(line)
        if m:
            line = m.group("rest").strip()
        line = re.sub(r"^\(\d+\) \([^)]*\) ", "", line)  # schema-salad's "(loader id) (uri)"
        if line:
            parts.append(line)
    message = " ".join(parts)
    message = re.sub(r"\s+", " ", message).strip()
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 1].rstrip() + "…"
    return message


def _path_to_best_leaf(exc: SchemaSaladException) -> list[SchemaSaladException]:
    """The chain root -> leaf ending at the leaf with the deepest source position."""
    best: tuple[tuple[int, int], list[SchemaSaladException]] | None = None

    def visit(node: SchemaSaladException, chain: list[SchemaSaladException]) -> None:
        nonlocal best
        chain = chain + [node]
        if not node.children:
            if not str(node.message).strip():
                return
            pos = node.start or (0, 0)
            key = (pos[0], pos[1])  # the deepest position; the first leaf among equals
            if best is None or key > best[0]:
                best = (key, chain)
            return
        for child in node.children:
            visit(child, chain)

    visit(exc, [])
    return best[1] if best else [exc]


def to_workflow_error(exc: BaseException, *, default_source: str,
                      default_field: str = "cwl") -> WorkflowError | AnnotationError:
    """Condense a cwltool/schema-salad exception into one WorkflowError line."""
    if isinstance(exc, WorkflowError):
        return exc
    text = str(exc)
    if "Supported versions are" in text or "not a recognized CWL version" in text \
            or "Unrecognized version" in text:
        return WorkflowError(f"unsupported CWL version (plastic reads {', '.join(CWL_VERSIONS)})",
                             source=default_source, field="cwlVersion")
    if isinstance(exc, ValueError) and "must be a dict" in text:
        return WorkflowError("not a CWL document (expected a mapping at the top level)",
                             source=default_source, field="document")
    js = expression_error(text)
    source = default_source
    field: str | None = None
    message = ""
    if isinstance(exc, SchemaSaladException) and exc.children:
        chain = _path_to_best_leaf(exc)
        leaf = chain[-1]
        message = _squash(leaf.detailed_message or leaf.message)
        for node in chain:
            found = _field_in(str(node.message))
            if found:
                field = found
        if leaf.file:
            source = display_path(leaf.file)
            if leaf.start:
                source = f"{source}:{leaf.start[0]}:{leaf.start[1]}"
    else:
        locations = [m for m in (_LOCATION.match(line.strip()) for line in text.splitlines()) if m]
        if locations:
            last = locations[-1]
            source = f"{display_path(last.group('file'))}:{last.group('line')}:{last.group('col')}"
        message = _squash(text)
        for line in text.splitlines():
            found = _field_in(line)
            if found:
                field = found
    if js:
        message = js
    if not message:
        message = type(exc).__name__
    message = _MISSING_REF.sub(_missing_file, message)
    message = _MISSING_FILE.sub(lambda m: f"file not found: {display_path(m.group(1))}", message)
    if _YAML_ERROR.search(text):
        field = "YAML syntax"
    unknown = _PLASTIC_UNKNOWN_FIELD.search(message)
    if unknown:
        return AnnotationError("unknown field (expected one of vcpus, vram, preempt, instanceType)",
                               source=source, field=f"plastic:Plasticity.{unknown.group(1)}")
    return WorkflowError(message, source=source, field=field or default_field)

