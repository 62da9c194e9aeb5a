"""docs/tools.md, "Protected paths", says what `protected_paths.toml` holds: every pattern, every
`[[input_writer]]` entry (by its first command) and the size of tree a copy is searched to."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

from unified.tools import _protected

DOC = (Path(__file__).resolve().parents[2] / "docs" / "tools.md").read_text(encoding="utf-8")
DATA = tomllib.loads(resources.files("unified.tools").joinpath("protected_paths.toml").read_text(encoding="utf-8"))


def test_every_protected_pattern_is_in_the_table() -> None:
    table = DOC.split("### Protected paths", 1)[1]
    missing = [p for p in DATA["protected"]["patterns"] if f"`{p}`" not in table and p != ".git/**"]
    assert missing == []
    assert "`.git` and everything in it" in table


def test_every_command_that_writes_what_its_input_names_is_named() -> None:
    section = DOC.split("### Protected paths", 1)[1]
    missing = [e["commands"][0] for e in DATA["input_writer"] if f"`{e['commands'][0]}" not in section]
    assert missing == []


def test_the_tree_search_bound_is_the_documented_one() -> None:
    assert f"at most {_protected.TREE_CHECK_MAX_ENTRIES:,} entries" in DOC
