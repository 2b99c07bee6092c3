"""Two rules of the suite, checked on every tests/**/*.py with ``ast``:

(a) no module imports a test module (a module whose last name part starts with ``test_`` or is
    ``conftest``), at module level or inside a function: what test modules share lives in tests/fakes/
    (fakes and test data) or in a helper module next to its users (tests/aws/helpers.py, ...);
(b) no ``sleep`` outside the body of a ``while``/``for`` loop: a sleep that paces a polling loop is
    fine, one that hopes something has happened by its end is a timing bet; wait for the condition
    instead (tests/waiting.py).

Each exception is listed below with its reason.  Code in strings (a subprocess's ``-c`` program such as
``"time.sleep(300)"``) is not a call and passes anyway.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DATA = TESTS / "data"


# (b): the sleeps that are not bets, by file and the call's source text.
SLEEPS_ALLOWED: dict[tuple[str, str], str] = {
    ("tests/mesos/test_driver_replay.py", "time.sleep(delay)"):
        "the fake master answers SUBSCRIBE late on purpose: the delay is the scenario, nothing is waited for",
    ("tests/store/test_events.py", "time.sleep(0.2)"):
        "the event comes 0.2 s after a blocking read from a fixed id began (no race): the test checks the read "
        "waited for it (0.15 < waited)",
}


def _files() -> list[Path]:
    """The suite's modules (not the Python files of the data sets under tests/data)."""
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts and DATA not in p.parents)


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _is_test_module(dotted: str) -> bool:
    """A test module of this suite (tests.**.test_* or tests.**.conftest; not another package's)."""
    parts = dotted.split(".")
    return parts[0] == "tests" and (parts[-1].startswith("test_") or parts[-1] == "conftest")


def _is_module(dotted: str) -> bool:
    where = REPO.joinpath(*dotted.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _package_of(path: Path) -> list[str]:
    return list(path.relative_to(REPO).with_suffix("").parts[:-1])


def _from_module(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module of ``from X import ...`` (relative imports resolved against the file's package)."""
    if not node.level:
        return node.module or ""
    package = _package_of(path)
    base = package[:len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imported_test_modules(path: Path, tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module) for every import of a test module in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_test_module(alias.name):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            module = _from_module(path, node)
            if _is_test_module(module):
                yield node.lineno, module
            else:  # from tests.core import conftest: a module, not a test function of a scenarios module
                for alias in node.names:
                    dotted = f"{module}.{alias.name}"
                    if _is_test_module(dotted) and _is_module(dotted):
                        yield node.lineno, dotted
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and _call_name(node) in ("import_module", "__import__"):
            if _is_test_module(node.args[0].value):
                yield node.lineno, node.args[0].value


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _is_sleep(node: ast.Call) -> bool:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id == "sleep"
    return isinstance(func, ast.Attribute) and func.attr == "sleep" and isinstance(func.value, ast.Name) \
        and func.value.id in ("time", "asyncio")


def _sleeps(node: ast.AST, in_loop: bool = False) -> Iterator[tuple[ast.Call, bool]]:
    """Every sleep call under ``node``, and whether a while/for body holds it (within its own function)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        in_loop = False  # a function's body is not paced by a loop around its definition
    if isinstance(node, ast.Call) and _is_sleep(node):
        yield node, in_loop
    if isinstance(node, (ast.While, ast.For, ast.AsyncFor)):
        for child in node.body:
            yield from _sleeps(child, True)
        for part in (node.test if isinstance(node, ast.While) else node.iter, *node.orelse):
            yield from _sleeps(part, in_loop)
        if not isinstance(node, ast.While):
            yield from _sleeps(node.target, in_loop)
        return
    for child in ast.iter_child_nodes(node):
        yield from _sleeps(child, in_loop)


def _parsed() -> Iterator[tuple[Path, str, ast.AST]]:
    for path in _files():
        source = path.read_text(encoding="utf-8")
        yield path, source, ast.parse(source, filename=str(path))


def test_no_module_imports_a_test_module():
    bad = []
    for path, _source, tree in _parsed():
        bad += [f"{_rel(path)}:{line}: imports {module}" for line, module in imported_test_modules(path, tree)]
    assert not bad, ("test modules import from other test modules; move what they share to tests/fakes/ or a "
                     "helper module:\n" + "\n".join(bad))


def test_no_sleep_outside_a_loop():
    bad = []
    for path, source, tree in _parsed():
        rel = _rel(path)
        for call, in_loop in _sleeps(tree):
            if not in_loop and (rel, ast.get_source_segment(source, call)) not in SLEEPS_ALLOWED:
                bad.append(f"{rel}:{call.lineno}: {ast.get_source_segment(source, call)}")
    assert not bad, ("sleeps that do not pace a loop (timing bets): wait for a condition instead "
                     "(tests/waiting.py):\n" + "\n".join(bad))


def test_the_exceptions_are_still_needed():
    """An allowed sleep that is gone leaves the list; every allowed one says why."""
    present = set()
    for path, source, tree in _parsed():
        present |= {(_rel(path), ast.get_source_segment(source, call)) for call, _ in _sleeps(tree)}
    assert set(SLEEPS_ALLOWED) <= present, set(SLEEPS_ALLOWED) - present
    assert all(reason.strip() for reason in SLEEPS_ALLOWED.values())


def test_the_checks_see_what_they_are_for():
    """The rules' own parts, on small sources: a function-level import, a relative one, a sleep in a loop,
    one after it, one in a function defined in a loop, and code in a string."""
    source = '''
import time
from . import conftest
def f():
    from tests.core.test_elastic import SHAPES
    for _ in range(3):
        time.sleep(0.1)
        def g():
            time.sleep(1)
    time.sleep(2)
    code = "time.sleep(300)"
'''
    path = TESTS / "core" / "example.py"
    tree = ast.parse(source)
    assert sorted(m for _, m in imported_test_modules(path, tree)) == ["tests.core.conftest",
                                                                       "tests.core.test_elastic"]
    assert [(ast.get_source_segment(source, c), ok) for c, ok in _sleeps(tree)] == [
        ("time.sleep(0.1)", True), ("time.sleep(1)", False), ("time.sleep(2)", False)]


@pytest.mark.slow
def test_make_tests_workers_keep_a_modules_shared_fixture_in_one_worker():
    """make test's pytest-xdist options, on a module whose fixture is module-wide (tests/cwl/test_job_flags.py:
    `tool`): the tests that use it carry the module's group and run in one worker, so the fixture is made
    once.  With pytest 9.2 and pytest-xdist 3.8 the group was dropped without a word (pytest-xdist issue
    1386: the group is written into a node id field pytest 9.2 no longer reads) and each worker made
    the fixture again; pyproject.toml keeps pytest below 9.2 for that."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
                          "--no-loadscope-reorder", "-v", "tests/cwl/test_job_flags.py"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stdout[-3000:]
    ran = re.findall(r"^\[(gw\d+)\] .*?PASSED (.+?)\s*$", res.stdout, re.MULTILINE)
    shared = [(worker, test) for worker, test in ran if "test_every_kind_of_input" in test or "test_bad_flags" in test
              or "test_flags_go_on_top" in test]
    assert len(shared) >= 3, res.stdout[-3000:]
    assert all(test.endswith("@tests/cwl/test_job_flags.py") for _, test in shared), shared
    assert len({worker for worker, _ in shared}) == 1, shared
