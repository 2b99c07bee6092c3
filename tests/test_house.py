"""The house rules, checked on the source: plastic/core is standard library only, no import cycles
between plastic's modules, no module much over 600 lines."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "plastic"
MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_at_load(path: Path, name: str, is_package: bool) -> set[str]:
    """Modules imported when `path` is loaded: module-level imports, not those under TYPE_CHECKING
    (nor the lazy ones inside functions, which run later)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                found.add(mod)
                found.update(f"{mod}.{a.name}" for a in node.names)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for block in ("body", "orelse", "finalbody"):
                    visit(getattr(node, block, []) or [])
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    out: dict[str, set[str]] = {}
    for name, path in mods.items():
        # a module's own packages are loaded before it whatever it imports: not an edge
        deps = {d for d in imports_at_load(path, name, path.name == "__init__.py")
                if d in mods and d != name and not name.startswith(d + ".")}
        out[name] = deps
    return out


def test_the_core_imports_only_the_standard_library_and_itself():
    bad = []
    for name, path in modules().items():
        if not name.startswith("plastic.core"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for n in names:
                top = n.split(".")[0]
                if top != "plastic" and top not in sys.stdlib_module_names and top != "__future__":
                    bad.append((name, n))
                elif top == "plastic" and not n.startswith("plastic.core"):
                    bad.append((name, n))
    assert not bad, bad


def test_no_import_cycles_between_plastic_modules():
    g = graph()
    assert len(g) > 50  # the walk found the package
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def walk(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(g[node]):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                walk(dep, stack)
        stack.pop()
        state[node] = 2

    for mod in sorted(g):
        if mod not in state:
            walk(mod, [])
    assert not cycles, cycles


def test_no_module_over_600_lines():
    long = {name: n for name, path in modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, long
