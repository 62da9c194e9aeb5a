"""The caller's rules in the Gemini CLI's spelling: MCP names over overlapping servers, subagents, outright denials.

- With MCP servers `a` and `a_b` in one run the CLI's `mcp_a_b_c` is tool `c` of `a_b` or tool `b_c` of `a`;
  only the longest server's reading was decided, so a rule denying `mcp__a__b_c` let the call through. Every
  reading is decided now and the strictest wins (deny, then ask, then allow).
- A subagent cannot be asked: a tool the CLI asks unified about is denied to the CLI's subagents, and a tool the
  policy denies every call of is denied to everyone by the CLI itself (e2e: test_gemini_cli_subagent_policy.py).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from unified import ExecuteParams
from unified._adapters.gemini_cli._launch import (
    SUBAGENTS,
    outright_denials,
    policy_tool_names,
    subagent_denials,
    subagent_rules,
)
from unified._adapters.gemini_cli._permissions import PermissionGate
from unified.events import UserInputResponse
from unified.tools import PermissionRequest, Policy, ToolCall

pytestmark = pytest.mark.anyio


def _user(toml: str) -> Policy:
    return Policy.default().with_toml(toml)


def test_an_mcp_name_over_overlapping_servers_is_read_every_way() -> None:
    assert policy_tool_names("mcp_a_b_c", ("a", "a_b")) == ("mcp__a_b__c", "mcp__a__b_c")
    assert policy_tool_names("mcp_a_b_c", ("a_b",)) == ("mcp__a_b__c",)
    assert policy_tool_names("mcp_x_y", ("a",)) == ("mcp__x__y",)  # the CLI's own split
    assert policy_tool_names("read_file", ("a",)) == ("read_file",)


async def _never(request: PermissionRequest) -> UserInputResponse:
    raise AssertionError(f"nobody is asked here: {request}")


@pytest.mark.parametrize(
    ("toml", "decision", "rule"),
    [
        ('[[rule]]\nname = "no-bc"\ntoolName = "mcp__a__b_c"\ndecision = "deny"\npriority = 500\n', "deny", "no-bc"),
        ('[[rule]]\nname = "no-c"\ntoolName = "mcp__a_b__c"\ndecision = "deny"\npriority = 500\n', "deny", "no-c"),
    ],
)
async def test_the_strictest_reading_decides(tmp_path: Path, toml: str, decision: str, rule: str) -> None:
    policy = _user(toml + '\n[[rule]]\nname = "mcp-ok"\ntoolName = "mcp__*"\ndecision = "allow"\npriority = 1\n')
    gate = PermissionGate(ExecuteParams(prompt="p", cwd=tmp_path, approval_mode="yolo"), _never, policy)
    try:
        named = gate.strictest(policy_tool_names("mcp_a_b_c", ("a", "a_b")), {"x": 1}, unseen=False)
        verdict = await gate.decide(ToolCall("c1", named, {"x": 1}))
    finally:
        await gate.aclose()
    assert (verdict.decision, verdict.rule) == (decision, rule)


async def test_an_ask_reading_outranks_an_allow(tmp_path: Path) -> None:
    policy = _user('[[rule]]\nname = "ask-bc"\ntoolName = "mcp__a__b_c"\ndecision = "ask_user"\n')
    gate = PermissionGate(ExecuteParams(prompt="p", cwd=tmp_path, approval_mode="yolo"), _never, policy)
    try:
        assert gate.strictest(("mcp__a_b__c", "mcp__a__b_c"), {}, unseen=True) == "mcp__a__b_c"
    finally:
        await gate.aclose()


def test_a_tool_the_policy_denies_outright_is_denied_to_everyone() -> None:
    deny = '[[rule]]\nname = "no-del"\ntoolName = "mcp__srv__delete_repo"\ndecision = "deny"\n'
    assert outright_denials(_user(deny)) == {"mcp_srv_delete_repo": ("no-del", ("default", "plan", "yolo"))}
    assert outright_denials(_user(deny.replace('decision = "deny"', 'argsPattern = "prod"\ndecision = "deny"'))) == {}
    some = (
        '\n[[rule]]\nname = "test-ok"\ntoolName = "mcp__srv__delete_repo"\nargsPattern = "test"\ndecision = "allow"\n'
    )
    assert outright_denials(_user(deny + some.replace("\n[[rule]]", "\n[[rule]]\npriority = 900", 1))) == {}
    assert (
        outright_denials(_user('[[rule]]\nname = "w"\ntoolName = "edit_file"\ndecision = "deny"\n'))["replace"][0]
        == "w"
    )
    assert outright_denials(_user('[[rule]]\nname = "all"\ntoolName = "mcp__srv__*"\ndecision = "deny"\n')) == {}


def test_a_subagent_is_denied_what_the_cli_asks_unified_about() -> None:
    policy = _user(
        '[[rule]]\nname = "ask-shell"\ntoolName = "run_shell_command"\ndecision = "ask_user"\n\n'
        '[[rule]]\nname = "srv"\ntoolName = "mcp__srv__*"\ndecision = "deny"\n\n'
        '[[rule]]\nname = "no-write"\ntoolName = "write_file"\ndecision = "deny"\n'
    )
    denials = subagent_denials(policy)
    # a wildcard is every tool (fail closed); write_file is denied to everyone, so it needs no subagent rule
    assert denials == {"run_shell_command": "ask-shell", "*": "srv"}
    rules = tomllib.loads(subagent_rules(denials))["rule"]
    assert {(r["toolName"], r["subagent"]) for r in rules} == {(t, a) for t in denials for a in SUBAGENTS}
    for rule in rules:
        assert rule["decision"] == "deny"
        assert rule["modes"] == ["default", "autoEdit", "plan", "yolo"]
        assert "argsPattern" not in rule
        assert f"the policy rule {denials[rule['toolName']]} does not allow it" in rule["denyMessage"]
