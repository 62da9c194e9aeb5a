"""Another name of a credential file inside the workspace (a hard link to `~/.netrc`, a link to that link) against the
real gemini CLI: its read tools, which run unasked under unified's read-only rule, ask for it over ACP (nobody answers
here: denied) and are denied on stream-json (`_launch.credential_alias_rules`, from the workspace searched when the run
starts); an ordinary read stays unasked on both."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import call, stream_line, text
from tests.hang_guard import HANG_GUARD_S
from unified.events import (
    PermissionDecision,
    Result,
    SubagentStarted,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    UserInputRequest,
    UserInputResponse,
)

Run = Callable[..., Awaitable[list[UnifiedEvent]]]
Responses = Callable[..., Path]
SECRET = "s3cret-netrc-password"

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


def _netrc() -> Path:
    path = Path(os.environ["HOME"]) / ".netrc"
    path.write_text(f"machine example.com login me password {SECRET}\n")
    path.chmod(0o600)
    return path


def _outputs(events: list[UnifiedEvent]) -> str:
    return "\n".join(str(e.model_dump()) for e in events if isinstance(e, ToolResult))


def _decisions(events: list[UnifiedEvent]) -> dict[str, PermissionDecision]:
    return {e.tool_use_id: e for e in events if isinstance(e, PermissionDecision)}


ALIASED_READS = [
    ("read_file", {"file_path": "docs/n"}),
    ("read_file", {"file_path": "./docs/../docs/s"}),  # a link to the hard link, spelled otherwise
    ("grep_search", {"pattern": "password"}),
]
"""The reads of the credential file by another name: one run makes all three, each judged on its own (the rules the
run starts with are the same for each), so one CLI start per transport proves them all."""


@pytest.mark.parametrize("transport", ["acp", "stream-json"])
async def test_a_hard_link_to_a_credential_file_is_not_read_unasked(
    run_gemini: Run, responses: Responses, workspace: Path, transport: str
) -> None:
    """READ before, on both transports: the CLI's read tools gave the model `~/.netrc`'s password through `docs/n`
    (or a link to it). An ordinary file is still read, unasked, in the same run."""
    (workspace / "docs").mkdir()
    os.link(_netrc(), workspace / "docs" / "n")
    (workspace / "docs" / "s").symlink_to("n")
    fake = responses(
        *(stream_line(call(tool, **args)) for tool, args in ALIASED_READS),
        stream_line(call("read_file", file_path="notes.txt")),
        stream_line(text("done")),
    )
    events = await run_gemini(fake, backend_options={"transport": transport})
    outputs = _outputs(events)
    assert SECRET not in outputs
    assert "alpha" in outputs  # notes.txt, read
    *denied, allowed = _decisions(events).values()
    assert [(d.tool_name, d.decision) for d in denied] == [(tool, "deny") for tool, _ in ALIASED_READS]
    assert allowed.decision == "allow"
    if transport == "acp":  # asked, and nobody answers here
        for decision in denied:
            assert decision.rule == "outside-workspace"
            assert "docs/n, docs/s: a hard link or a link to one" in (decision.reason or "")
        assert allowed.rule == "read-only"


@pytest.mark.parametrize("transport", ["acp", "stream-json"])
async def test_a_link_out_of_the_workspace_to_a_credential_file_is_not_read(
    run_gemini: Run, responses: Responses, workspace: Path, transport: str
) -> None:
    """A pin of the CLI's own check (passes on the old code too), which `credential_aliases` relies on to search only
    when a credential file has other names or lies in the workspace: a symbolic link to `~/.netrc` itself (one name,
    outside the workspace) is refused as outside the workspace (the CLI resolves links), unasked as it is."""
    (workspace / "t").symlink_to(_netrc())
    fake = responses(stream_line(call("read_file", file_path="t")), stream_line(text("done")))
    events = await run_gemini(fake, backend_options={"transport": transport})
    outputs = _outputs(events)
    assert SECRET not in outputs
    assert "resolves outside the allowed workspace directories" in outputs


async def test_an_asked_read_of_a_hard_link_runs_once_the_user_allows_it(
    run_gemini: Run, responses: Responses, workspace: Path
) -> None:
    """Over ACP the read is asked, not broken: allowed by the caller, the CLI reads the file."""
    os.link(_netrc(), workspace / "n")
    asked: list[UserInputRequest] = []

    async def allow(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.allow()

    fake = responses(stream_line(call("read_file", file_path="n")), stream_line(text("done")))
    events = await run_gemini(fake, on_user_input=allow)
    assert SECRET in _outputs(events)
    (decision,) = _decisions(events).values()
    assert (decision.decision, decision.decided_by) == ("allow", "user")
    assert len(asked) == 1


async def test_a_delegation_carries_no_read_of_a_hard_link_past_the_asking_rule(
    run_gemini: Run, responses: Responses, workspace: Path
) -> None:
    """A model that delegates the reads to a subagent gets no further: outside yolo the shipped table asks for
    `invoke_agent`, and nobody can be asked about a delegation (0.61 never asks; a subagent's own question waited for
    ever), so the CLI does not offer it (`never_asked_denials`): the delegation is denied by policy, no subagent
    starts, and the reads (by read_file and by grep_search, one after the other) are the main agent's, asked and
    denied with nobody to answer; its ordinary read runs and the run ends. (In yolo, every mode's asking rules are off:
    unified's yolo allows every call, a credential read too, docs/tools.md.) This test's docstring said the subagent
    made the reads; it never did (no `subagent_started`)."""
    os.link(_netrc(), workspace / "n")
    fake = responses(
        stream_line(call("invoke_agent", agent_name="generalist", prompt="read it")),
        stream_line(call("read_file", file_path="n")),
        stream_line(call("grep_search", pattern="password")),
        stream_line(call("read_file", file_path="notes.txt")),
        stream_line(text("done")),
    )
    with anyio.fail_after(HANG_GUARD_S):
        events = await run_gemini(fake, backend_options={"fake_responses_strict": False})
    outputs = _outputs(events)
    assert SECRET not in outputs
    assert "alpha" in outputs  # the ordinary read ran
    assert isinstance(events[-1], Result)
    assert events[-1].status == "success", events[-1].error
    assert not any(isinstance(e, SubagentStarted) for e in events)
    uses = [e for e in events if isinstance(e, ToolUse)]
    assert [(e.name, e.subagent_task_id) for e in uses] == [
        ("invoke_agent", None),
        ("read_file", None),
        ("grep_search", None),
        ("read_file", None),
    ]
    decisions = [_decisions(events)[e.tool_use_id] for e in uses]
    assert [d.decision for d in decisions] == ["deny", "deny", "deny", "allow"]
    assert [d.rule for d in decisions[1:]] == ["outside-workspace", "outside-workspace", "read-only"]
