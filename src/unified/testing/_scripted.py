"""`ScriptedBackend`: an in-process backend that plays a script of UnifiedEvents.

It runs through the same stream guard as the real backends, so an orchestrator's unit tests
see exactly the stream shape (seq, assistant_message aggregation, usage, one final result,
cancellation and timeouts) they will see in production, without a model, a binary or a network.

As the protocol promises, every client-side `tool_use` gets exactly one `permission_decision`: the
script's own, if it has one for that call; else the answer to the script's `Ask` about that call
(`source="permission"`, its `tool_use_id`), decided by the user; else an allow the backend decided
("the scripted backend runs what its script calls"), right after the `tool_use`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio

from unified._exports import publish
from unified.backends import BackendEntry, RunContext, RunOutcome, UnsupportedOption
from unified.errors import ConfigurationError
from unified.events import (
    PermissionDecision,
    SessionStarted,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    Usage,
    UserInputRequest,
    UserInputResponse,
)
from unified.types import ExecuteParams

__all__ = [
    "BACKEND_ENTRY",
    "Ask",
    "EndMessage",
    "Fail",
    "ScriptedBackend",
    "Sleep",
    "Step",
    "create_backend",
    "demo_script",
]


@dataclass(frozen=True)
class EndMessage:
    """Close the current assistant message (a model turn ends); counts a turn for the main agent."""

    subagent_task_id: str | None = None


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Fail:
    """Raise this exception at this point, as a crashing backend would."""

    error: Exception


@dataclass(frozen=True)
class Ask:
    """Ask the caller through `on_user_input`; the answer is kept in `ScriptedBackend.answers`."""

    request: UserInputRequest


Step = UnifiedEvent | Usage | EndMessage | Sleep | Fail | Ask


@dataclass
class ScriptedBackend:
    """Plays `steps` in order, then ends with `outcome`."""

    steps: Sequence[Step]
    outcome: RunOutcome = field(default_factory=RunOutcome)
    name: str = "scripted"
    unsupported: list[UnsupportedOption] = field(default_factory=list)
    answers: list[UserInputResponse] = field(default_factory=list)

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        return list(self.unsupported)

    async def run(self, ctx: RunContext) -> RunOutcome:
        decided = {step.tool_use_id for step in self.steps if isinstance(step, PermissionDecision)}
        asked = {
            step.request.tool_use_id
            for step in self.steps
            if isinstance(step, Ask) and step.request.source == "permission" and step.request.tool_use_id
        }
        names: dict[str, str] = {}
        for step in self.steps:
            if isinstance(step, Usage):
                ctx.add_usage(step)
            elif isinstance(step, EndMessage):
                await ctx.end_message(step.subagent_task_id)
                if step.subagent_task_id is None:
                    ctx.turns += 1
            elif isinstance(step, Sleep):
                await anyio.sleep(step.seconds)
            elif isinstance(step, Fail):
                raise step.error
            elif isinstance(step, Ask):
                answer = await ctx.ask_user(step.request.model_copy())
                self.answers.append(answer)
                call = step.request.tool_use_id
                if call in names and call not in decided and step.request.source == "permission":
                    decided.add(call)
                    allowed = answer.permission() != "deny"
                    await ctx.emit(
                        PermissionDecision(
                            tool_use_id=call,
                            tool_name=names[call],
                            decision="allow" if allowed else "deny",
                            decided_by="user",
                            reason="the user allowed it" if allowed else "the user denied it (or gave no answer)",
                            message=answer.message,
                            stops_run=answer.stop,
                        )
                    )
            else:
                await ctx.emit(step.model_copy())
                if isinstance(step, ToolUse) and not step.server_side:
                    names[step.tool_use_id] = step.name
                    if step.tool_use_id not in decided | asked:
                        decided.add(step.tool_use_id)
                        await ctx.emit(
                            PermissionDecision(
                                tool_use_id=step.tool_use_id,
                                tool_name=step.name,
                                decision="allow",
                                decided_by="backend",
                                reason="the scripted backend runs what its script calls",
                            )
                        )
        return self.outcome


def demo_script(prompt: str, cwd: str) -> list[Step]:
    """A short, fixed session: thought, a tool call and its result, an answer, usage."""
    return [
        SessionStarted(
            backend="scripted",
            model="scripted-demo",
            session_id="5c71pted-0000-4000-8000-000000000001",
            short_id="5c71pted",
            cwd=cwd,
            transport="in-process",
        ),
        Thinking(text="The user wants a demonstration; list the workspace first.", replace=True),
        ToolUse(tool_use_id="call-1", name="list_dir", input={"path": "."}),
        ToolResult(tool_use_id="call-1", output="README.md\nsrc/\ntests/"),
        EndMessage(),
        TextDelta(text=f"You asked: {prompt!r}. "),
        TextDelta(text="This answer comes from the scripted backend: no model, no network."),
        Usage(input_tokens=42, output_tokens=17, thinking_tokens=12),
        EndMessage(),
    ]


def create_backend(params: ExecuteParams) -> ScriptedBackend:
    """The registry's entry point: `backend_options["script"]` or the built-in demo script."""
    script = params.backend_options_dict().get("script")
    if script is None:
        return ScriptedBackend(demo_script(params.prompt, str(params.cwd)))
    if isinstance(script, ScriptedBackend):
        return script
    if isinstance(script, Sequence):
        return ScriptedBackend(list(script))
    raise ConfigurationError(
        "backend_options['script'] must be a ScriptedBackend or a sequence of steps",
        hint="see unified.testing._scripted for the step types",
    )


BACKEND_ENTRY = BackendEntry("scripted", "unified.testing._scripted:create_backend")
"""How an installed unified finds this backend: the `scripted` entry point of the `unified.backends` group."""


publish("unified.testing", ["Ask", "EndMessage", "Fail", "ScriptedBackend", "Sleep"], globals())
