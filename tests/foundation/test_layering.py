"""The shape of the package, checked from its source: public surface, import direction, no cycle.

Every import counts here, wherever it stands (module level, under `TYPE_CHECKING`, inside a
function): a cycle closed by a function-level import is still a cycle a reader must untangle.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"

PUBLIC_MODULES = (
    "unified",
    "unified.backends",
    "unified.capabilities",
    "unified.conversations",
    "unified.errors",
    "unified.events",
    "unified.sessions",
    "unified.testing",
    "unified.testing.pytest_plugin",
    "unified.tools",
    "unified.types",
)
"""docs/api.md lists the same modules (checked below)."""

KIT_MAY_IMPORT = {"unified._exports", "unified._redaction", "unified._files", "unified._limits", "unified._text"}
"""Beside the public modules, the test kit may use these leaves: the `__module__` helper, the
secret scrubber (a cassette must be scrubbed exactly as the library redacts), the file checks (a cassette
that is no regular file is named as the library names one: `not_a_file`, bad input round 20), the limits (a YAML
script's aliases are bounded as the library bounds JSON, `MAX_JSON_CONTAINERS`, round 24) and the text helpers (a
bad line of a script is said as `unified serve` says one, `first_problem`, round 24)."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / "unified").rglob("*.py"))}


def _imports(module: str) -> Iterator[str]:
    """Every module of ours that `module` imports, anywhere in its source."""
    known = _modules()
    path = known[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("unified"):
                    yield _nearest(alias.name, known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            if not base.startswith("unified"):
                continue
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield candidate if candidate in known else _nearest(base, known)


def _nearest(name: str, known: dict[str, Path]) -> str:
    while name not in known and "." in name:
        name = name.rpartition(".")[0]
    return name


@cache
def _graph() -> dict[str, set[str]]:
    return {m: {i for i in _imports(m) if i != m} for m in _modules()}


def _reached(module: str) -> set[str]:
    """Every module of ours that importing `module` may load: what it imports, what those import, and so on."""
    graph = _graph()
    seen: set[str] = set()
    todo = [module]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _is_public(module: str) -> bool:
    return not any(part.startswith("_") for part in module.split("."))


def test_no_import_cycle_counting_every_import() -> None:
    assert _cycles(_graph()) == []


def test_the_protocol_imports_nothing_of_ours() -> None:
    assert _graph()["unified.events"] == set()


def test_adapters_never_import_one_another() -> None:
    """Not even through a shared module: what adapters share lives below them all (`unified.backends`,
    `unified._binary`, `unified._internal`, `unified._sessions`)."""
    crossings = [
        (m, i)
        for m in _graph()
        if m.startswith("unified._adapters.")
        for i in _reached(m)
        if i.startswith("unified._adapters.") and i.split(".")[2] != m.split(".")[2]
    ]
    assert crossings == []


def test_the_tool_runtime_knows_no_adapter() -> None:
    """Nor through a module it imports."""
    leaks = [
        (m, i)
        for m in _graph()
        if m.startswith("unified.tools")
        for i in _reached(m)
        if i.startswith(("unified._adapters", "unified._binary"))
    ]
    assert leaks == []


def test_the_test_kit_uses_public_modules_only() -> None:
    leaks = [
        (m, i)
        for m, imports in _graph().items()
        if m.startswith("unified.testing")
        for i in imports
        if not i.startswith("unified.testing") and not _is_public(i) and i not in KIT_MAY_IMPORT
    ]
    assert leaks == []


def test_the_public_modules_are_the_documented_few() -> None:
    public = sorted(m for m in _modules() if _is_public(m))
    assert public == sorted(PUBLIC_MODULES)
    documented = re.findall(r"^\| `(unified[a-z_.]*)` \|", (ROOT / "docs" / "api.md").read_text(), re.M)
    assert sorted(documented) == sorted(PUBLIC_MODULES)


def test_every_module_declares_all() -> None:
    missing = [
        m
        for m, path in _modules().items()
        if not re.search(r"^__all__\b", path.read_text(encoding="utf-8"), re.M)
        and path.name != "__main__.py"
        and (path.name != "__init__.py" or re.search(r"^(def|class) ", path.read_text(encoding="utf-8"), re.M))
    ]
    assert missing == []


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_public_names_report_a_public_home(module: str) -> None:
    mod = importlib.import_module(module)
    wrong = []
    for name in mod.__all__:
        obj = getattr(mod, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        home = obj.__module__
        if not _is_public(home) or name not in getattr(importlib.import_module(home), "__all__", ()):
            wrong.append(f"{name}: {home}")
    assert wrong == []


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_public_class_and_function_says_what_it_is(module: str) -> None:
    """`help()` on a public name says something: its own docstring, never only an inherited one (an error
    class that said nothing showed UnifiedError's, a model pydantic's)."""
    mod = importlib.import_module(module)
    silent = []
    for name in mod.__all__:
        obj = getattr(mod, name)
        if inspect.isclass(obj):
            doc = obj.__dict__.get("__doc__")
        elif inspect.isfunction(obj):
            doc = obj.__doc__
        else:
            continue
        if not (doc or "").strip():
            silent.append(name)
    assert silent == []


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_public_pydantic_model_builds(module: str) -> None:
    """A model moved to its public home still resolves its annotations (unified._exports)."""
    from pydantic import BaseModel

    mod = importlib.import_module(module)
    for name in mod.__all__:
        obj = getattr(mod, name)
        if inspect.isclass(obj) and issubclass(obj, BaseModel):
            obj.model_rebuild()
            assert obj.__pydantic_complete__, name
