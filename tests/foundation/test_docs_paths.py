"""What the docs name exists: every repository path they cite, and every module an adapter's page lists.

A doc that names `src/unified/_internal/x.py` after `x.py` moved sends a reader nowhere; this
keeps the paths, and each backend page's "Modules" table, equal to the tree.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([*ROOT.glob("docs/**/*.md"), ROOT / "README.md", ROOT / "bench" / "README.md"])
_PATH = re.compile(r"`((?:src|tests|bench|scripts|docs|cassettes|\.ci)/[A-Za-z0-9_./-]+)`")
_SRC_RELATIVE = re.compile(r"`((?:_internal|_adapters|_sessions|_binary|_cli|tools|testing)/[A-Za-z0-9_./-]+\.py)`")
_MODULE_ROW = re.compile(r"^\| `(_?[a-z_]+\.py)` \|", re.M)


def _cited(doc: Path) -> list[str]:
    text = doc.read_text(encoding="utf-8")
    cited = [m.rstrip(".,") for m in _PATH.findall(text)]
    cited += [f"src/unified/{m}" for m in _SRC_RELATIVE.findall(text)]
    return [c for c in cited if "<" not in c and "*" not in c]


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_every_cited_path_exists(doc: Path) -> None:
    missing = sorted({c for c in _cited(doc) if not (ROOT / c).exists()})
    assert missing == []


def _module_table(doc: Path) -> set[str]:
    text = doc.read_text(encoding="utf-8")
    section = re.search(r"^## Modules\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    return set(_MODULE_ROW.findall(section.group(1))) if section else set()


ADAPTER_PAGES = {
    page: ROOT / "src" / "unified" / "_adapters" / page.stem.replace("-", "_")
    for page in sorted((ROOT / "docs" / "backends").glob("*.md"))
    if (ROOT / "src" / "unified" / "_adapters" / page.stem.replace("-", "_")).is_dir()
}


@pytest.mark.parametrize("page", ADAPTER_PAGES, ids=[p.stem for p in ADAPTER_PAGES])
def test_an_adapter_page_lists_its_modules(page: Path) -> None:
    modules = {p.name for p in ADAPTER_PAGES[page].glob("*.py")}
    assert _module_table(page) == modules


_PUBLIC = ("testing", "sessions", "events", "types", "errors", "backends", "capabilities", "conversations", "tools")
_DOTTED = re.compile(r"`unified\.(" + "|".join(_PUBLIC) + r")\.([A-Za-z][A-Za-z0-9_]*)")
_IMPORT = re.compile(r"^from unified((?:\.[a-z]+)?) import \(?([A-Za-z0-9_, \n]+?)\)?$", re.M)


def _resolves(module: str, name: str) -> bool:
    import importlib

    if hasattr(importlib.import_module(module), name):
        return True
    try:
        importlib.import_module(f"{module}.{name}")
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_every_public_name_the_docs_give_can_be_imported(doc: Path) -> None:
    """`unified.testing.X` in the text, and `from unified.testing import X` in an example, both work as written."""
    text = doc.read_text(encoding="utf-8")
    named = {(f"unified.{module}", name) for module, name in _DOTTED.findall(text)}
    for module, names in _IMPORT.findall(text):
        named |= {(f"unified{module}", name) for name in re.split(r"[,\s]+", names) if name}
    assert sorted(f"{module}.{name}" for module, name in named if not _resolves(module, name)) == []


def test_the_cassette_endpoint_testing_md_gives_is_the_kits() -> None:
    """docs/testing.md gives `async with cassette_endpoint(turns, faults) as base_url` beside
    `unified.testing.use_cassette`: it was importable only from the private `unified.testing._cassettes`."""
    import unified.testing

    assert "cassette_endpoint" in unified.testing.__all__
    assert unified.testing.cassette_endpoint.__module__ == "unified.testing"


def test_the_sessions_page_says_where_every_backend_keeps_its_sessions() -> None:
    """docs/sessions.md's table of where a session lives had no codex row (codex keeps rollout files)."""
    from unified import sessions

    text = (ROOT / "docs" / "sessions.md").read_text(encoding="utf-8")
    table = text[text.index("| backend | where |") : text.index("## Across backends")]
    rows = {line.split("|")[1].strip() for line in table.splitlines()[2:] if line.startswith("| ")}
    assert rows == set(sessions.session_backends())
