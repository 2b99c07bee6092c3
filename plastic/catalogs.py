"""Loading instance catalogs from files (YAML or JSON) or the embedded default.

Kept light on purpose: PyYAML is imported only when a YAML document has to be
parsed, and nothing heavy (rich, cwltool) is imported at all.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from typing import Any

from plastic.core.errors import CatalogError
from plastic.core.model import Catalog
from plastic.core.planning.catalog import catalog_from_mapping
from plastic.fileio import read_text

log = logging.getLogger(__name__)

#: File name of the embedded default catalog inside the `plastic/data` folder.
DEFAULT_CATALOG_NAME = "catalog-aws-us-east-1.yaml"


def _parse_yaml(text: str, *, source: str) -> Any:
    import yaml  # deferred: only YAML documents pay for it

    loader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = " ".join(" ".join(str(p) for p in (exc.context, exc.problem) if p).split()) or "syntax error"
        raise CatalogError(f"invalid YAML at {where}{what}", source=source) from None
    except yaml.YAMLError as exc:
        raise CatalogError(f"invalid YAML: {' '.join(str(exc).split())}", source=source) from None


def _parse_json(text: str, *, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", source=source
        ) from None


def parse_catalog_text(text: str, *, source: str) -> Catalog:
    """Parse catalog text (JSON when it starts with `{` or `[`, YAML otherwise) and validate it."""
    stripped = text.lstrip("\ufeff \t\r\n")
    data = _parse_json(stripped, source=source) if stripped[:1] in ("{", "[") else _parse_yaml(text, source=source)
    return catalog_from_mapping(data, source=source)


@functools.lru_cache(maxsize=1)
def _default_catalog() -> Catalog:
    # the file beside this module (what importlib.resources finds too; importing that costs about
    # 2% of the instructions of a 10,000-task `plastic plan`)
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", DEFAULT_CATALOG_NAME)
    try:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise CatalogError(f"embedded default catalog unreadable: {exc}", source=source) from None
    return parse_catalog_text(text, source=source)


def load_catalog(path: str | None) -> Catalog:
    """Load and validate a catalog file; `None` gives the embedded default (us-east-1).

    Every problem (missing or unreadable file, YAML/JSON syntax, a bad field)
    is a `CatalogError` whose `source` is the path.
    """
    if path is None:
        catalog = _default_catalog()
        log.debug("default catalog: %d instance types", len(catalog.instance_types))
        return catalog
    path = str(path)
    catalog = parse_catalog_text(read_text(path, CatalogError, "catalog"), source=path)
    log.debug("catalog %s: %d instance types", path, len(catalog.instance_types))
    return catalog
