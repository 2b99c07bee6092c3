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
import tempfile
from typing import Any

from plastic.core.errors import InputError, PlasticError, WorkflowError

LOWERED_NAME = "packed.cwl"
POLICY_NAME = "policy.json"


def plain(value: Any) -> Any:
    """ruamel's scalar subclasses -> plain JSON values."""
    return json.loads(json.dumps(value))


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
    from schema_salad.ref_resolver import file_uri

    from plastic.cwl.glue import to_workflow_error

    file_part, _, fragment = path.partition("#")
    uri = file_uri(os.path.abspath(file_part)) + (f"#{fragment}" if fragment else "")
    try:
        lc, obj, uri = fetch_document(uri, loading_context())
        lc, uri = resolve_and_validate_document(lc, obj, uri)
        packed = cwltool_pack(lc, uri)
    except PlasticError:
        raise
    except Exception as exc:  # noqa: BLE001 - cwltool raises many kinds; all mean "bad document"
        raise to_workflow_error(exc, default_source=path) from exc
    return plain(packed)


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
