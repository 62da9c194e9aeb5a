"""Which entries of a workspace are another name of a credential file (`_protected.credential_aliases`), and the
gemini CLI rules that ask for (or deny) their reads (`_launch.credential_alias_rules`). e2e on the real binary:
tests/e2e/gemini_cli/test_gemini_cli_credential_aliases.py."""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from unified._adapters.gemini_cli._launch import credential_alias_rules
from unified.tools._protected import credential_aliases

pytestmark = pytest.mark.unit


@pytest.fixture
def netrc() -> Path:
    path = Path(os.environ["HOME"]) / ".netrc"  # the test's own home (tests/conftest.py)
    path.write_text("machine x password p\n")
    return path


def test_every_name_of_a_credential_file_in_the_roots_is_found(netrc: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "docs" / "deep").mkdir(parents=True)
    (ws / "plain.txt").write_text("x")
    os.link(netrc, ws / "docs" / "deep" / "n")
    (ws / "s").symlink_to("docs/deep/n")  # a link to the hard link
    (ws / "t").symlink_to("s")  # and a chain
    (ws / "d").symlink_to("docs")  # a folder link: not followed, what it leads to is searched where it lies
    assert sorted(credential_aliases([ws]) or ()) == ["docs/deep/n", "s", "t"]
    assert credential_aliases([ws], limit=3) is None  # past the bound: nothing can be vouched for


def test_no_search_when_no_name_in_the_roots_can_be_one(netrc: Path, tmp_path: Path) -> None:
    """With one name of each credential file, outside the roots, a link to it is refused by the CLI as outside its
    workspace (e2e): no entry is looked at (a bound of 0 would say None)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "t").symlink_to(netrc)
    assert credential_aliases([ws], limit=0) == []
    assert credential_aliases([netrc.parent]) == [".netrc"]  # a root that holds the file itself: searched


def _rules(text: str) -> list[dict[str, Any]]:
    return list(tomllib.loads(text)["rule"]) if text else []


def _applies(rule: dict[str, Any], tool: str, args: dict[str, Any]) -> bool:
    named = rule["toolName"] if isinstance(rule["toolName"], list) else [rule["toolName"]]
    pattern = rule.get("argsPattern")
    return tool in named and (
        pattern is None or re.search(pattern, json.dumps(args, separators=(",", ":"))) is not None
    )


@pytest.mark.parametrize("asking", [True, False])
def test_the_rules_name_the_aliases_and_leave_ordinary_reads_alone(asking: bool) -> None:
    assert credential_alias_rules([], asking=asking) == ""  # the usual workspace: every read stays unasked
    rules = _rules(credential_alias_rules(["docs/n", "a b.txt"], asking=asking))
    decision = "ask_user" if asking else "deny"
    assert {rule["decision"] for rule in rules} == {decision}
    assert all(rule["priority"] > 380 for rule in rules)  # above the read-only allow (`_RULE_PRIORITY`)

    def covered(tool: str, **args: Any) -> bool:
        return any(_applies(rule, tool, args) for rule in rules)

    for path in ("docs/n", "/w/docs/n", "./x/../docs/n", "n", "linked/a b.txt"):
        assert covered("read_file", file_path=path), path
    for path in ("notes.txt", "docs/n2", "docs/xn", "n/x"):
        assert not covered("read_file", file_path=path), path
    assert covered("grep_search", pattern="p")
    assert not covered("glob", pattern="*")
    assert not covered("list_directory", dir_path=".")
    unnamed = _rules(credential_alias_rules(None, asking=asking)) + _rules(
        credential_alias_rules(['q"'], asking=asking)
    )
    assert all("argsPattern" not in rule and "read_file" in rule["toolName"] for rule in unnamed)
