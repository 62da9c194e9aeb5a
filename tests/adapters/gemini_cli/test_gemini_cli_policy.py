"""The `--policy` file that makes the CLI ask unified, checked against unified's own table (no process).

The real binary's behaviour under it (`echo hi` asks, plan mode, yolo) is in tests/e2e/gemini_cli and the
conformance suite.
"""

from __future__ import annotations

import tomllib

import pytest

from unified._adapters.gemini_cli._launch import CLI_NAMES, READ_ONLY_CLI_TOOLS, policy_rules
from unified.tools import ALIASES, Decision, Policy
from unified.types import ApprovalMode


def _rules(text: str) -> list[dict[str, object]]:
    rules = tomllib.loads(text)["rule"]
    assert isinstance(rules, list)
    return rules


def test_the_cli_names_are_the_tool_runtimes_aliases_the_other_way_round() -> None:
    assert {theirs: ours for ours, theirs in CLI_NAMES.items()} == dict(ALIASES)


@pytest.mark.parametrize("mode", ["plan", "default", "auto_edit"])
@pytest.mark.parametrize("tool", READ_ONLY_CLI_TOOLS)
def test_what_the_cli_runs_unasked_is_what_unifieds_table_allows_unasked(tool: str, mode: ApprovalMode) -> None:
    verdict = Policy.default().evaluate(ALIASES.get(tool, tool), {}, mode)
    assert verdict.decision is Decision.ALLOW
    assert verdict.rule is not None
    assert verdict.rule.name == "read-only"


def test_the_shell_rule_carries_arguments_so_the_clis_safe_command_heuristics_stay_out() -> None:
    """0.61's PolicyEngine.check applies its "known safe command" override only to a rule without argsPattern."""
    (shell,) = [r for r in _rules(policy_rules()) if r.get("toolName") == "run_shell_command"]
    assert (shell["decision"], shell["argsPattern"]) == ("ask_user", ".")
    assert "yolo" not in shell["modes"]  # type: ignore[operator]


def test_every_rule_holds_outside_yolo_and_none_allows_a_change() -> None:
    rules = _rules(policy_rules())
    for rule in rules:
        assert "yolo" not in rule["modes"]  # type: ignore[operator]
        assert rule["priority"] == 380  # 4.38: above the settings' tools.allowed, below their exclusions
    allowed = [r for r in rules if r["decision"] == "allow"]
    assert [r["toolName"] for r in allowed] == [list(READ_ONLY_CLI_TOOLS)]
    mcp = [r for r in rules if r.get("mcpName") == "*"]
    assert [r["decision"] for r in mcp] == ["ask_user"]


def test_excluded_tools_are_denied_by_the_clis_names() -> None:
    rules = _rules(policy_rules(["edit_file", "run_shell_command"]))
    denied = [(r["toolName"], r["priority"]) for r in rules if r["decision"] == "deny"]
    assert denied == [("replace", 999), ("run_shell_command", 999)]


def test_the_protected_paths_are_denied_in_patterns_the_cli_keeps() -> None:
    """The CLI drops an `argsPattern` over 2,048 characters, and the rule with it: red team round 8 made the one
    pattern of every protected path longer than that (the stream-json transport then refused to start). As many
    rules as needed, each under the limit, and every protected name is still denied by one of them."""
    import json
    import re

    from unified._adapters.gemini_cli._launch import protected_path_rules
    from unified.tools._protected import protected_path_patterns

    rules = _rules(protected_path_rules())
    patterns = [str(rule["argsPattern"]) for rule in rules]
    assert len(patterns) >= 2
    assert all(len(pattern) <= 2048 for pattern in patterns)
    assert all(rule["decision"] == "deny" for rule in rules)
    literal = [p for p in protected_path_patterns() if not any(c in p for c in "*?[")]
    assert literal
    for path in literal:
        arguments = json.dumps({"file_path": f"/ws/{path}"}, separators=(",", ":"))
        assert any(re.search(pattern, arguments) for pattern in patterns), path
    plain = json.dumps({"file_path": "/ws/notes.txt"}, separators=(",", ":"))
    assert not any(re.search(pattern, plain) for pattern in patterns)
