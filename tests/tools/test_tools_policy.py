"""The policy table, permission prompts, decision events and batch scheduling."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from unified.errors import RunStopped
from unified.events import PermissionDecision, ToolProgress, UserInputResponse
from unified.tools import (
    Decision,
    EventForwarder,
    PermissionAnswer,
    PermissionRequest,
    Policy,
    PolicyError,
    ToolCall,
    ToolRuntime,
    tool_family,
)
from unified.types import ApprovalMode

pytestmark = pytest.mark.anyio


class Recorder:
    def __init__(self) -> None:
        self.decisions: list[PermissionDecision] = []

    async def decision(self, call: ToolCall, event: PermissionDecision) -> None:
        self.decisions.append(event)

    async def progress(self, call: ToolCall, event: ToolProgress) -> None:
        return None


WRITE = ToolCall("w", "write_file", {"file_path": "x.txt", "content": "x"})
READ = ToolCall("r", "list_dir", {})
SHELL = ToolCall("s", "run_shell_command", {"command": "echo hi"})


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("default", ["allow", "deny", "deny"]),
        ("auto_edit", ["allow", "allow", "deny"]),
        ("yolo", ["allow", "allow", "allow"]),
        ("plan", ["allow", "deny", "deny"]),
    ],
)
@pytest.mark.e2e  # runs a real subprocess
async def test_shipped_defaults_per_mode(ws: Path, mode: ApprovalMode, expected: list[str]) -> None:
    rec = Recorder()
    outcomes = await ToolRuntime(ws, approval_mode=mode).run_batch([READ, WRITE, SHELL], rec)
    assert [d.decision for d in rec.decisions] == expected
    assert [o.is_error for o in outcomes] == [d == "deny" for d in expected]
    assert [o.decision for o in outcomes] == rec.decisions


async def test_decision_events_name_rule_and_reason(ws: Path) -> None:
    rec = Recorder()
    [out] = await ToolRuntime(ws, approval_mode="plan").run_batch([SHELL], rec)
    [event] = rec.decisions
    assert (event.tool_use_id, event.tool_name, event.decided_by, event.rule) == (
        "s",
        SHELL.name,
        "approval_mode",
        "plan-denies",
    )
    assert out.response == {"error": "Tool call run_shell_command was denied: rule plan-denies denies it in plan mode"}
    [noask] = await ToolRuntime(ws).run_batch([SHELL])
    assert noask.response == {
        "error": "Tool call run_shell_command was denied: it needs approval and nobody can answer in this "
        "non-interactive run"
    }
    assert noask.decision is not None
    assert noask.decision.decided_by == "policy"


@pytest.mark.e2e  # runs a real subprocess
async def test_event_forwarder_emits_decisions_and_progress_in_order(ws: Path) -> None:
    emitted: list[PermissionDecision | ToolProgress] = []

    async def emit(event: PermissionDecision | ToolProgress) -> None:
        emitted.append(event)

    [out] = await ToolRuntime(ws, approval_mode="yolo").run_batch([SHELL], EventForwarder(emit))
    assert not out.is_error
    assert isinstance(emitted[0], PermissionDecision)
    assert emitted[0] == out.decision
    assert [(type(e).__name__, e.tool_use_id) for e in emitted[1:]] == [("ToolProgress", "s")]
    assert isinstance(emitted[1], ToolProgress)
    assert emitted[1].message == "hi"


@pytest.mark.e2e  # runs a real subprocess
async def test_changing_a_rule_changes_the_decision(ws: Path) -> None:
    rules = '[[rule]]\nname = "shell-ok"\ntoolName = "run_shell_command"\ndecision = "allow"\npriority = 1\n'
    [before] = await ToolRuntime(ws).run_batch([SHELL])
    assert before.is_error
    rt = ToolRuntime(ws, policy=Policy.default().with_toml(rules))
    [after] = await rt.run_batch([SHELL])
    assert after.response["output"].startswith("Output: hi\n")
    assert after.decision is not None
    assert after.decision.rule == "shell-ok"


@pytest.mark.e2e  # runs a real subprocess
async def test_rules_file_with_args_pattern_and_command_prefix(ws: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = ["echo", "git status"]\ndecision = "allow"\n'
        '[[rule]]\ntoolName = "read_*"\nargsPattern = "\\\\.env"\ndecision = "deny"\npriority = 5\n'
    )
    rt = ToolRuntime(ws, rules_file=rules)
    (ws / ".env").write_text("K=V\n")
    (ws / "ok.txt").write_text("fine\n")
    calls = [
        ToolCall("1", "run_shell_command", {"command": "echo a && git status"}),
        ToolCall("2", "run_shell_command", {"command": "echo a; rm -rf x"}),
        ToolCall("3", "run_shell_command", {"command": "echo $(whoami)"}),
        ToolCall("4", "read_file", {"file_path": ".env"}),
        ToolCall("5", "read_file", {"file_path": "ok.txt"}),
    ]
    outcomes = await rt.run_batch(calls)
    assert [o.is_error for o in outcomes] == [False, True, True, True, False]
    assert outcomes[3].decision is not None
    assert outcomes[3].decision.rule == f"{rules}#2"


def test_policy_ordering_and_tiers() -> None:
    policy = Policy.default().with_toml('[[rule]]\ntoolName = "*"\ndecision = "deny"\npriority = 0\n')
    assert policy.evaluate("read_file", {}, "default").decision is Decision.DENY
    assert Policy.default().evaluate("mcp__x__y", {}, "default").decision is Decision.ASK_USER
    assert Policy.default().evaluate("mcp__x__y", {}, "plan").decision is Decision.DENY
    assert Policy().evaluate("anything", {}, "yolo").rule is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[rule]]\ndecision = 'allow'\n", "toolName is required"),
        ("[[rule]]\ntoolName = 'x'\ndecision = 'maybe'\n", "decision must be one of allow, deny, ask_user"),
        ("[[rule]]\ntoolName = 'x'\ndecision = 'allow'\npriority = 1000\n", "priority must be a number from 0 to 999"),
        ("[[rule]]\ntoolName = 'x'\ndecision = 'allow'\nmodes = ['turbo']\n", "modes must be a list drawn from"),
        ("[[rule]]\ntoolName = 'x'\ndecision = 'allow'\nargsPattern = '('\n", "argsPattern is not a valid regex"),
        ("[[rule]]\ntoolName = 'x'\ndecision = 'allow'\ncolour = 1\n", "unknown keys ['colour']"),
        ("[[rule]]\ntoolName = []\ndecision = 'allow'\n", "toolName must be a string or a non-empty list"),
        ("rules = 1\n", "unknown top-level keys ['rules']"),
        ("[[rule]\n", "invalid TOML"),
    ],
)
def test_policy_file_errors(text: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message.replace("[", r"\[")):
        Policy().with_toml(text, source="t.toml")


def test_missing_rules_file(ws: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read policy file"):
        ToolRuntime(ws, rules_file=ws / "nope.toml")


@pytest.mark.e2e  # runs a real subprocess
async def test_ask_user_allow_once_allow_always_and_deny(ws: Path) -> None:
    answers: list[PermissionAnswer] = ["deny", "allow_once", "allow_always"]
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return answers.pop(0)

    rt = ToolRuntime(ws, ask=ask)
    calls = [ToolCall(str(i), "run_shell_command", {"command": f"echo {i}"}) for i in range(3)]
    rec = Recorder()
    first = await rt.run_batch(calls, rec)
    assert [o.is_error for o in first] == [True, False, False]
    assert first[0].response == {"error": "Tool call run_shell_command was denied: the user denied it"}
    assert [(d.decision, d.decided_by) for d in rec.decisions] == [
        ("deny", "user"),
        ("allow", "user"),
        ("allow", "user"),
    ]
    assert rec.decisions[2].rule == "session:run_shell_command:echo 2"
    assert asked[0].summary == "Allow running `echo 0`?"
    # the session rule now answers for the approved command (however quoted), not for others
    [again, other] = await rt.run_batch(
        [
            ToolCall("4", "run_shell_command", {"command": "echo  '2'"}),
            ToolCall("5", "run_shell_command", {"command": "echo again"}),
        ]
    )
    assert not again.is_error
    assert again.decision is not None
    assert again.decision.decided_by == "policy"
    assert len(asked) == 4
    assert other.is_error


async def test_ask_failure_denies(ws: Path) -> None:
    async def ask(request: PermissionRequest) -> PermissionAnswer:
        raise RuntimeError("no terminal")

    [out] = await ToolRuntime(ws, ask=ask).run_batch([SHELL])
    assert out.response == {
        "error": "Tool call run_shell_command was denied: the permission prompt failed (RuntimeError: no terminal)"
    }


async def test_answer_with_changed_input_runs_that_input(ws: Path) -> None:
    """Allow with a changed input: the tool runs the user's input, and the decision says so."""

    async def ask(request: PermissionRequest) -> UserInputResponse:
        return UserInputResponse.allow(updated_input={"file_path": "safe.txt", "content": "reviewed\n"})

    rec = Recorder()
    [out] = await ToolRuntime(ws, ask=ask).run_batch([WRITE], rec)
    assert not out.is_error, out.response
    assert (ws / "safe.txt").read_text() == "reviewed\n"
    assert not (ws / "x.txt").exists()
    [decision] = rec.decisions
    assert (decision.decision, decision.decided_by) == ("allow", "user")
    assert decision.input == {"file_path": "safe.txt", "content": "reviewed\n"}


async def test_changed_input_that_is_invalid_is_denied(ws: Path) -> None:
    async def ask(request: PermissionRequest) -> UserInputResponse:
        return UserInputResponse.allow(updated_input={"file_path": 3})

    rec = Recorder()
    [out] = await ToolRuntime(ws, ask=ask).run_batch([WRITE], rec)
    assert out.is_error
    assert "the input the user gave is invalid" in out.response["error"]
    assert rec.decisions[0].decision == "deny"
    assert not (ws / "x.txt").exists()


async def test_deny_with_a_message_reaches_the_model(ws: Path) -> None:
    async def ask(request: PermissionRequest) -> UserInputResponse:
        return UserInputResponse.deny("use the staging directory instead")

    rec = Recorder()
    [out] = await ToolRuntime(ws, ask=ask).run_batch([SHELL], rec)
    assert out.response == {
        "error": "Tool call run_shell_command was denied: the user denied it. "
        "The user says: use the staging directory instead"
    }
    assert rec.decisions[0].message == "use the staging directory instead"


async def test_stop_the_run_raises_run_stopped_after_the_decision(ws: Path) -> None:
    async def ask(request: PermissionRequest) -> UserInputResponse:
        return UserInputResponse.stop_run("enough")

    rec = Recorder()
    with pytest.raises(RunStopped, match="the user stopped the run at write_file"):
        await ToolRuntime(ws, ask=ask).run_batch([WRITE], rec)
    [decision] = rec.decisions
    assert (decision.decision, decision.decided_by, decision.stops_run) == ("deny", "user", True)
    assert not (ws / "x.txt").exists()


async def test_no_answer_leaves_the_policy_deciding(ws: Path) -> None:
    async def ask(request: PermissionRequest) -> UserInputResponse:
        return UserInputResponse(cancelled=True)

    rec = Recorder()
    [out] = await ToolRuntime(ws, ask=ask).run_batch([SHELL], rec)
    assert out.is_error
    assert rec.decisions[0].decided_by in ("policy", "approval_mode")  # not the user: there was no answer
    assert "nobody answered" in (rec.decisions[0].reason or "")


def test_permission_request_event_round_trip() -> None:
    event = PermissionRequest(SHELL, "run_shell_command", "Allow running `echo hi`?").to_event("req-1")
    assert event.source == "permission"
    assert [o.id for o in event.questions[0].options] == ["allow_once", "allow_always", "deny"]
    assert event.tool_use_id == "s"
    assert UserInputResponse.allow(always=True).permission() == "allow_always"


async def test_unknown_excluded_and_invalid_calls(ws: Path) -> None:
    rt = ToolRuntime(ws, approval_mode="yolo", excluded_tools=["replace", "run_*"])
    names = [d["name"] for d in rt.declarations()]
    assert "edit_file" not in names
    assert "run_shell_command" not in names
    outcomes = await rt.run_batch(
        [
            ToolCall("1", "edit_file", {}),
            ToolCall("2", "read_file", {"file_path": "x", "bogus": 1}),
            ToolCall("3", "read_file", {}),
        ]
    )
    assert (
        outcomes[0]
        .response["error"]
        .startswith('Tool "edit_file" not found. Available tools: read_file, write_file, list_dir')
    )
    # Normal form: every call has exactly one decision, a call that cannot run at all the runtime's own.
    decisions = [o.decision for o in outcomes]
    assert [(d.decision, d.decided_by) for d in decisions if d is not None] == [("deny", "backend")] * 3
    assert outcomes[1].response == {
        "error": "Invalid parameters provided to read_file. Reason: bogus: Extra inputs are not permitted"
    }
    assert outcomes[2].response == {
        "error": "Invalid parameters provided to read_file. Reason: file_path: Field required"
    }


def test_declarations_per_family(ws: Path) -> None:
    rt = ToolRuntime(ws)
    legacy = {d["name"]: d for d in rt.declarations()}
    g3 = {d["name"]: d for d in rt.declarations(family=tool_family("gemini-3-pro-preview"))}
    assert tool_family("gemini-2.5-flash") == "default-legacy"
    assert legacy["read_file"]["description"] != g3["read_file"]["description"]
    assert legacy["tree"]["description"] == g3["tree"]["description"]
    for decl in legacy.values():
        params = decl["parameters"]
        assert params["type"] == "object"
        assert params["properties"]["wait_for_previous"]["type"] == "boolean"
        assert "title" not in str(params)
        assert "anyOf" not in str(params)


async def test_scheduling_parallel_reads_ordered_edits_and_barrier(ws: Path) -> None:
    log: list[str] = []
    started = {tag: anyio.Event() for tag in "abcd"}
    ended = {tag: anyio.Event() for tag in "abcd"}

    async def step(tag: str, after_start: str, after_end: str) -> str:
        """Waits for another step to start or to end: run one at a time, `a` and `b` would wait forever."""
        log.append(f"start {tag}")
        started[tag].set()
        if after_start:
            await started[after_start].wait()
        if after_end:
            await ended[after_end].wait()
        log.append(f"end {tag}")
        ended[tag].set()
        return tag

    rt = ToolRuntime(ws, approval_mode="yolo")
    rt.register(step)
    calls = [
        ToolCall("1", "step", {"tag": "a", "after_start": "", "after_end": "b"}),
        ToolCall("2", "step", {"tag": "b", "after_start": "a", "after_end": ""}),
        ToolCall("3", "step", {"tag": "c", "after_start": "", "after_end": "", "wait_for_previous": True}),
        ToolCall("4", "write_file", {"file_path": "f.txt", "content": "one"}),
        ToolCall("5", "edit_file", {"file_path": "f.txt", "old_string": "one", "new_string": "two"}),
        ToolCall("6", "step", {"tag": "d", "after_start": "", "after_end": ""}),
    ]
    with anyio.fail_after(HANG_GUARD_S):  # a scheduler that runs `a` and `b` one after the other hangs here
        outcomes = await rt.run_batch(calls)
    assert [o.call_id for o in outcomes] == ["1", "2", "3", "4", "5", "6"]
    assert all(not o.is_error for o in outcomes), [o.response for o in outcomes]
    assert sorted(log[:2]) == ["start a", "start b"]  # trio may start a batch's tasks in any order
    assert log[2:] == ["end b", "end a", "start c", "end c", "start d", "end d"]
    assert (ws / "f.txt").read_text() == "two"


async def test_unexpected_exception_becomes_error_response(ws: Path) -> None:
    def boom(x: int) -> int:
        raise KeyError(x)

    rt = ToolRuntime(ws, approval_mode="yolo")
    rt.register(boom)
    [out] = await rt.run_batch([ToolCall("1", "boom", {"x": 3})])
    assert out.response == {"error": "Tool boom failed unexpectedly: KeyError: 3"}


def test_the_shipped_policy_is_parsed_once_and_stays_as_shipped() -> None:
    """Every ToolRuntime (two per gemini-cli ACP run) starts from the shipped policy: it is parsed once, and
    what a runtime derives from it (`with_toml`) is a copy that leaves it as shipped."""
    from importlib import resources

    from unified.tools._policy import DEFAULT_TIER, parse_rules

    shipped = Policy.default()
    assert Policy.default() is shipped
    text = resources.files("unified.tools").joinpath("default_policy.toml").read_text(encoding="utf-8")
    fresh = Policy(tuple(parse_rules(text, source="default", tier=DEFAULT_TIER)))
    assert shipped == fresh
    extended = shipped.with_toml('[[rule]]\ntoolName = "*"\ndecision = "deny"\npriority = 0\n')
    assert len(extended.rules) == len(shipped.rules) + 1
    assert Policy.default() == fresh


@pytest.mark.parametrize("depth", [65, 3000])
async def test_arguments_nested_too_deep_to_check_are_denied_with_a_reason(depth: int) -> None:
    """Arguments nested past what JSON can be written for (an `argsPattern` is searched in their JSON) are
    refused with a reason, by no rule of the table and before any: never a RecursionError."""
    nested: object = "secret"
    for _ in range(depth):
        nested = [nested]
    policy = Policy.default().with_toml('[[rule]]\ntoolName = "read_file"\ndecision = "allow"\nargsPattern = "a"\n')
    verdict = policy.evaluate("read_file", {"file_path": "a", "x": nested}, "yolo")
    assert verdict.decision is Decision.DENY
    assert verdict.rule is not None
    assert verdict.rule.name == "nested-arguments"
    assert "nest deeper than 64 levels" in str(verdict.doubt)


async def test_unknown_tool_name_is_clipped_and_escaped(ws: Path) -> None:
    """A model's tool name of 10,000 characters, with a line break, or empty: the error names it as an echoed
    argument (200 characters, control characters escaped), never whole, and still lists the tools."""
    rt = ToolRuntime(ws, approval_mode="yolo")
    long = "x\nError: stop" + "n" * 10_000
    outcomes = await rt.run_batch([ToolCall("1", long, {}), ToolCall("2", "", {})])
    first = outcomes[0].response["error"]
    assert first.startswith("Tool \"'x\\nError: stop" + "n" * 186 + "…'\" not found. Available tools: read_file, ")
    assert "\n" not in first
    assert outcomes[1].response["error"].startswith('Tool "" not found. Available tools: read_file, ')
    assert [o.decision.decision for o in outcomes if o.decision is not None] == ["deny", "deny"]
