"""cwltool's side of `plastic lower`: packing and validating without the network, and writing
both output files whole or not at all.  Used by plastic.cwl.lower; imports cwltool lazily.

Links: packing and the validation of the result check links without the
network (an http(s) link is taken to exist): schema-salad would otherwise send
one HEAD request per unknown hint class per loaded tool, seconds on a
workflow of a dozen steps.  The original is checked for real by `load_cwl`
before.  (The lowered document itself declares the classes of its hints, see
plastic.cwl.lower, so that cwltool and Toil load it without those requests;
this fetcher covers what is left: links of the original while packing, and
any other http(s) link, such as a `format`, while validating.)

Writes: the lowered document is validated with cwltool from a temporary file in
the output directory before anything takes a final name; then both files are
renamed into place, and the previous `packed.cwl` is put back if the policy
cannot follow.  A failure leaves the directory as it was (a directory created
for the run is removed again).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import uuid
from collections.abc import Mapping
from typing import Any

from plastic.core.errors import InputError, PlasticError, WorkflowError

LOWERED_NAME = "packed.cwl"
POLICY_NAME = "policy.json"


_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


class WrittenFloat(float):
    """A float of the source document that keeps the text it was written as.

    cwltool puts a float on a command line as ruamel writes it back: `1.23e5` in
    a document gives `123000`, the same number written `123000.0` gives
    `123000.0`.  The lowered document writes such a float as the source did (see
    `to_json_text`), so a lowered tool gets the command line the original gets.
    """

    text: str

    def __new__(cls, value: float, text: str) -> WrittenFloat:
        number = super().__new__(cls, value)
        number.text = text
        return number

    def __getnewargs__(self) -> tuple[float, str]:  # copy.deepcopy
        return float(self), self.text


def plain(value: Any) -> Any:
    """ruamel's containers and scalar subclasses -> plain JSON values (floats as `WrittenFloat`)."""
    from ruamel.yaml.scalarfloat import ScalarFloat

    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, ScalarFloat):
        return _written_float(value)
    for kind in (str, int, float):
        if isinstance(value, kind):
            return kind(value)
    return json.loads(json.dumps(value))


def _written_float(value: Any) -> float:
    from ruamel.yaml.representer import RoundTripRepresenter

    text = RoundTripRepresenter().represent_scalar_float(value).value
    if _JSON_NUMBER.fullmatch(text) and float(text) == float(value) and text != repr(float(value)):
        return WrittenFloat(float(value), text)
    return float(value)


def to_json_text(document: Any) -> str:
    """The lowered document as JSON text, each `WrittenFloat` written as the source wrote it."""
    literals: dict[str, str] = {}
    mark = f"plastic-float-{uuid.uuid4().hex}-"

    def swap(node: Any) -> Any:
        if isinstance(node, WrittenFloat):
            key = f"{mark}{len(literals)}"
            literals[json.dumps(key)] = node.text
            return key
        if isinstance(node, Mapping):
            return {k: swap(v) for k, v in node.items()}
        if isinstance(node, list):
            return [swap(v) for v in node]
        return node

    text = json.dumps(swap(document), indent=2, ensure_ascii=False) + "\n"
    if literals:
        text = re.sub(re.escape(f'"{mark}') + r'[0-9]+"', lambda m: literals[m.group(0)], text)
    return text


def loading_context() -> Any:
    """plastic's loading context, checking links without the network (see `_offline_links`)."""
    from plastic.cwl.glue import ensure_extension_registered, new_loading_context

    ensure_extension_registered()
    lc = new_loading_context()
    lc.fetcher_constructor = _offline_links
    return lc


def _offline_links(cache: Any, session: Any) -> Any:
    """schema-salad's fetcher, except that an http(s) link is taken to exist without asking.

    Checking sends one HEAD request per link and per loaded process (the class
    `http://arvados.org/cwl#UsePreemptible` of every lowered tool: seconds
    without a network).  The original was loaded with real checks by
    `load_cwl` before; the packed document holds no http(s) `run:` any more.
    """
    from urllib.parse import urlsplit

    from schema_salad.fetcher import DefaultFetcher

    class OfflineLinks(DefaultFetcher):
        def check_exists(self, url: str) -> bool:
            if urlsplit(url).scheme in ("http", "https"):
                return True
            return super().check_exists(url)

    return OfflineLinks(cache, session)


def load(path: str, source: str) -> Any:
    """Load (and so validate) a CWL document with cwltool, errors as one line."""
    from cwltool.load_tool import load_tool
    from schema_salad.ref_resolver import file_uri

    from plastic.cwl.glue import to_workflow_error

    try:
        return load_tool(file_uri(os.path.abspath(path)), loading_context())
    except PlasticError:
        raise
    except Exception as exc:  # noqa: BLE001 - cwltool raises many kinds
        raise to_workflow_error(exc, default_source=source) from exc


def pack(path: str) -> dict[str, Any]:
    """cwltool's packed form of the document: one `$graph`, `#main` first-class."""
    from cwltool.load_tool import fetch_document, resolve_and_validate_document
    from cwltool.pack import pack as cwltool_pack

    from plastic.cwl import document_uri
    from plastic.cwl.glue import to_workflow_error

    _keep_every_object_in_place()
    try:
        lc, obj, uri = fetch_document(document_uri(path), loading_context())
        lc, uri = resolve_and_validate_document(lc, obj, uri)
        packed = cwltool_pack(lc, uri)
    except PlasticError:
        raise
    except Exception as exc:  # noqa: BLE001 - cwltool raises many kinds; all mean "bad document"
        raise to_workflow_error(exc, default_source=path) from exc
    return plain(packed)


def _keep_every_object_in_place() -> None:
    """Turn off cwltool's last packing pass, which folds objects of one id into `$import`s.

    Packing ends with a pass (`cwltool.pack.import_embed`) that turns every object
    whose `id` (or `name`) was met before into `{"$import": id}`.  Meant for a type
    or tool embedded twice, it also folds objects that only share a name, which
    CWL users write often and cwltool runs (with a "previously defined" warning):
    a step named like a workflow output became that output, a tool's output named
    like its input became the input (cwltool issues #1277 and #2343, open), and
    the lowered workflow had lost them.  Nor do true repeats survive lowering as
    `$import`s: every step gets its own copy of its tool, and the ids a
    requirement's `$import` left are dropped (plastic.cwl.lower), so a record
    type of a SchemaDefRequirement was imported from an object no longer there.
    So plastic's packing keeps every object where it is; a repeated type is
    written out in full in each tool that uses it.  Idempotent; for this process
    only (cwltool does not pack while it runs a workflow).
    """
    import cwltool.pack

    cwltool.pack.import_embed = _leave_in_place


def _leave_in_place(_document: Any, _seen: object = None) -> None:
    return None


def _stage(directory: str, name: str, text: str) -> str:
    """A hidden temporary file beside its final name, written and flushed to disk."""
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # as open() would have made it, not mkstemp's 0600
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def _umask() -> int:
    """The process's umask, read without changing it where Linux allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def commit(out_dir: str, lowered: str, policy: str, source: str) -> None:
    """Both files whole under their final names, or the directory as it was."""
    created = not os.path.isdir(out_dir)
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the directory: {exc.strerror or exc}", source=out_dir,
                         field="--outdir") from None
    final = os.path.join(out_dir, LOWERED_NAME)
    staged: list[str] = []
    backup: str | None = None
    done = False
    try:
        try:
            staged.append(_stage(out_dir, LOWERED_NAME, lowered))
            staged.append(_stage(out_dir, POLICY_NAME, policy))
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror or exc}", source=out_dir, field="--outdir") from None
        try:
            load(staged[0], source)
        except PlasticError as exc:  # a bug of the lowering, but said in one line
            raise WorkflowError(f"the lowered workflow does not validate: {exc}", source=source,
                                field="lowering") from None
        try:
            had_previous = os.path.lexists(final)
            if had_previous:  # kept aside, to put back if the policy cannot follow
                backup = os.path.join(out_dir, f".{LOWERED_NAME}.{os.getpid()}.previous")
                try:
                    os.link(final, backup)
                except OSError:
                    backup = None
            os.replace(staged[0], final)
            try:
                os.replace(staged[1], os.path.join(out_dir, POLICY_NAME))
            except OSError:
                if backup is not None:
                    os.replace(backup, final)
                elif not had_previous:
                    _unlink(final)
                raise
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror or exc}", source=out_dir, field="--outdir") from None
        done = True
    finally:
        for tmp in staged:
            _unlink(tmp)  # gone already when renamed
        if backup is not None:
            _unlink(backup)
        if created and not done:
            try:
                os.rmdir(out_dir)
            except OSError:
                pass
