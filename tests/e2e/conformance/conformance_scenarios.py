"""The conformance scenarios: one list, each played by FakeGemini against every backend.

Each scenario is data: a FakeGemini script of `ModelTurn`s (served to streamGenerateContent for the
gemini CLI and generate-content, and as Interactions steps for interactions), `ExecuteParams`
tweaks, the capabilities it observes, and the expected normalised shape (see `conformance_harness`).
A backend whose matrix cell is `none` for a capability named in `alternatives` gets that
alternative shape instead, so every difference between backends is declared here by name.

Tool calls: the scripts call only tools that the gemini CLI and unified's own runtime
(src/unified/tools) both accept with the same arguments: `read_file{file_path}` and
`write_file{file_path, content}` (our runtime takes the CLI's parameter names; `ALIASES` maps the
CLI's `list_directory`/`replace` to ours). The one exception is the MCP scenario, whose tool name
differs per backend (the CLI's `<tool>` vs our `mcp__<server>__<tool>`): `turns_for` gives each
backend its own script there, and the shape uses the name both share after normalisation.

`observes` names the capabilities a scenario proves working when its expected (not alternative)
shape appears; `CAPABILITY_CHECKS` adds the evidence a shape alone cannot show (several deltas for
streaming, a signature echoed to the model, usage equal to what the server reported, ...).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from tests.e2e.conformance.conformance_harness import (
    CHANGED_INPUT,
    DENIAL_MESSAGE,
    MODEL,
    Answer,
    Run,
    Shape,
    b64,
)
from unified.events import ImageOutput, PermissionDecision, TextDelta, Thinking, WarningEvent
from unified.testing import (
    CODEX_MODEL,
    Fault,
    FunctionCall,
    GoogleSearchCall,
    GoogleSearchResult,
    ImageStep,
    InteractionTurn,
    ModelTurn,
    RecordedTurn,
    ServerStep,
    ServerTool,
    TextStep,
    Thought,
    Turn,
    Usage,
)
from unified.types import ApprovalMode

PNG_1x1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c63f8cfc0f01f00050001ff89993d1d0000000049454e44ae426082"
)
"""A valid 1x1 RGBA PNG (Codex decodes images and drops one it cannot read: an earlier constant's IDAT had
a bad checksum)."""


@dataclass(frozen=True)
class FirstRun:
    """A run made before the scenario's own run (its session is the one resumed)."""

    prompt: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Texts:
    """Texts every backend gives alike, in order: each tool_result's output (`kind="tool_output"`) or each
    thought (`kind="thinking"`), the workspace written `{cwd}`. A backend whose matrix column declares a
    difference gives that difference's texts instead: `declared` maps backend -> (difference name, texts)."""

    kind: Literal["tool_output", "thinking"]
    same: tuple[str | None, ...]
    declared: Mapping[str, tuple[str, tuple[str | None, ...]]] = field(default_factory=dict)

    def expected(self, backend: str) -> tuple[str | None, tuple[str | None, ...]]:
        """(the declared difference that applies, or None; the texts `backend` must give)."""
        name, texts = self.declared.get(backend, (None, self.same))
        return name, texts


@dataclass(frozen=True)
class Scenario:
    name: str
    turns: tuple[Turn, ...]
    shape: Shape
    observes: tuple[str, ...] = ()
    alternatives: Mapping[str, Shape] = field(default_factory=dict)
    """capability → the shape a backend with `none` for it shows instead (the capability is not observed there)."""
    alternatives_for: Mapping[tuple[str, str], Shape] = field(default_factory=dict)
    """(backend, capability) → that backend's shape where its `none` looks unlike `alternatives` says."""
    differences: Mapping[tuple[str, str], Shape] = field(default_factory=dict)
    """(backend, capability) → the shape a `partial` cell's note announces for that backend (still observed)."""
    known_gaps: Mapping[str, str] = field(default_factory=dict)
    """backend → why it fails today (an adapter bug or an over-claimed cell): run as a strict xfail, and
    its observations do not count for coverage. Remove the entry when the adapter is fixed."""
    turns_for: Mapping[str, tuple[Turn, ...]] = field(default_factory=dict)
    """backend → its own script, where the backends' tools differ (names, server-side tools)."""
    shapes_for: Mapping[str, Shape] = field(default_factory=dict)
    """backend → the shape its own script (`turns_for`) gives, where its tools make another shape (Claude
    Code's subagent is a `general-purpose` agent that reports in text, not gemini's `complete_task`)."""
    options_for: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    """backend → extra backend_options."""
    aliases: Mapping[str, str] = field(default_factory=dict)
    """Tool names the normaliser treats as the same tool (see `conformance_harness.tool_name`)."""
    mcp: Literal["stdio", "http", "sse"] | None = None
    """Connect the MCP server `mcp_echo_server.py` as server `echo`: run as a stdio server, or served over
    streamable HTTP or SSE on 127.0.0.1 (the backend, or the binary it drives, connects to it)."""
    prompt: str = "Please do the task."
    approval_mode: ApprovalMode = "default"
    approval_modes_for: Mapping[str, ApprovalMode] = field(default_factory=dict)
    """backend → the approval mode it runs the scenario in, where not `approval_mode`."""
    answer: Answer | None = None
    """How `on_user_input` answers every request; None: no handler."""
    cancel_after_first_event: bool = False
    first_run: FirstRun | None = None
    """Resume: run this first, then the scenario with `resume=<its short id>`."""
    images: bool = False
    final_text: str | None = None
    files: Mapping[str, bool] = field(default_factory=dict)
    """Workspace paths that must (True) or must not (False) exist after the run (`victim.txt` is there before
    every run: a command that deletes it must not have run)."""
    texts: tuple[Texts, ...] = ()
    """Tool outputs or thoughts compared across backends, with the matrix's declared differences."""

    def script(self, backend: str) -> tuple[Turn, ...]:
        return self.turns_for.get(backend, self.turns)

    def expected(self, backend: str, level: Callable[[str], str]) -> tuple[Shape, str | None]:
        """The shape for `backend` (whose matrix levels `level` gives), and the capability a `none` replaced."""
        for (name, capability), alternative in self.alternatives_for.items():
            if name == backend and level(capability) == "none":
                return alternative, capability
        for capability, alternative in self.alternatives.items():
            if level(capability) == "none":
                return alternative, capability
        for (name, capability), difference in self.differences.items():
            if name == backend and level(capability) == "partial":
                return difference, None
        return self.shapes_for.get(backend, self.shape), None


TEXT = "Hello from the fake model."
GROUNDED = {
    "candidates": [
        {
            "content": {"parts": [{"text": "Found it."}], "role": "model"},
            "finishReason": "STOP",
            "groundingMetadata": {"webSearchQueries": ["unified"]},
        }
    ]
}
NOTES = FunctionCall(name="read_file", args={"file_path": "notes.txt"})
USER_DENIED = "Tool call write_file was denied: the user denied it"
CANCELED = 'Tool "write_file" was canceled by the user.'
"""What the gemini CLI tells the model of a call its client refused (the matrix's `denial_text`)."""
SJ = "gemini-cli/stream-json"
"""The gemini CLI's headless transport: the same binary and tools as `gemini-cli`, so the same scripts; no
thoughts, no prompts (the approval mode decides alone: `default` registers no write or shell tool), no MCP,
no images (docs/capabilities.md)."""
NOT_REGISTERED = ("text", "result success")
"""What follows a headless call of a tool the CLI did not register (it fails, the model answers)."""
CLI_WROTE = "Successfully created and wrote to new file: {cwd}/new.txt. Here is the updated code:\nwritten\n"
DELEGATING = (
    ModelTurn(function_calls=[FunctionCall(name="delegate", args={"task": "Read notes.txt and say what it holds."})]),
    ModelTurn(function_calls=[NOTES]),
    ModelTurn(text="alpha"),
    ModelTurn(text="The subagent says alpha."),
)
"""The subagent scenario on unified's own loop: the parent delegates, the subagent reads and answers, then the
parent ends."""


def shell(command: str) -> ModelTurn:
    return ModelTurn(function_calls=[FunctionCall(name="run_shell_command", args={"command": command})])


SHELL_CANCELED = 'Tool "run_shell_command" was canceled by the user.'
NOBODY_TO_ASK = (
    "Tool call run_shell_command was denied: it needs approval and nobody can answer in this non-interactive run"
)
WRITE = FunctionCall(name="write_file", args={"file_path": "new.txt", "content": "written\n"})
CLAUDE_READ = {"notes.txt": "1\talpha\n2\tbeta\n3\t", "more.txt": "1\tgamma\n2\t"}
"""Claude Code's Read of the workspace's files (its matrix's `read_output`): numbered lines, the empty last one too."""
CLAUDE_WROTE = "File created successfully at: new.txt (file state is current in your context — no need to Read it back)"


def claude_denied(why: str, tool: str = "Write") -> str:
    """unified's refusal as the claude-code backend words it to the model: Claude Code's name for the tool."""
    return f"Tool call {tool} was denied: {why}"


CODEX_PATCH_REJECTED = "patch rejected by the user"
CODEX_REJECTED = "rejected by the user"
"""What Codex tells the model of a patch or command its client declined (its matrix's `denial_text`)."""
CLAUDE_AGENT = FunctionCall(
    name="Agent",
    args={
        "description": "Read the notes",
        "prompt": "Read notes.txt.",
        "subagent_type": "general-purpose",
        "run_in_background": False,
    },
)

IMAGE_CHUNKS = (
    {"candidates": [{"content": {"role": "model", "parts": [{"text": "Here is the picture."}]}}]},
    {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG_1x1).decode()}}],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8},
    },
)
"""A streamed answer with text, then a generated image (the shape of the real image-output recordings)."""


NO_MCP = ("tool mcp_echo_echo error", *NOT_REGISTERED)
"""A column that connects no MCP server: the model's call of its tool fails as one of a tool the CLI lacks."""
PLAN_REFUSED = (
    "Tool execution denied by policy. You are in Plan Mode and cannot modify source code. You may ONLY use "
    "write_file or replace to save plans to the designated plans directory as .md files."
)
"""The headless CLI's own refusal of a write in plan mode (the matrix's `plan_denial_text`)."""


def _remote_mcp(transport: Literal["http", "sse"], shapes_for: Mapping[str, Shape] | None = None) -> Scenario:
    """The echo call through the MCP server served over `transport` on 127.0.0.1: the backend (or its
    binary) connects to it; the Interactions API calls a remote server itself, so its column plays the
    steps Google streams for it (its tool named echo/echo)."""
    said = {"text": f"over {transport}"}
    steps = [
        ServerStep(
            type="mcp_server_tool_call", data={"id": "m1", "name": "echo", "server_name": "echo", "arguments": said}
        ),
        ServerStep(
            type="mcp_server_tool_result",
            data={"call_id": "m1", "name": "echo", "server_name": "echo", "result": f"echo: over {transport}"},
        ),
        TextStep(text="Echoed."),
    ]
    return Scenario(
        f"mcp_tool_over_{transport}",
        (ModelTurn(function_calls=[FunctionCall(name="mcp__echo__echo", args=said)]), ModelTurn(text="Echoed.")),
        ("tool mcp_echo_echo ok", "text", "result success"),
        observes=("mcp",),
        turns_for={
            **dict.fromkeys(
                ("gemini-cli", SJ),
                (ModelTurn(function_calls=[FunctionCall(name="mcp_echo_echo", args=said)]), ModelTurn(text="Echoed.")),
            ),
            "interactions": (InteractionTurn(steps=steps),),
        },
        alternatives_for={(SJ, "mcp"): NO_MCP},
        aliases={"echo/echo": "mcp_echo_echo"},
        approval_mode="yolo",
        mcp=transport,
        shapes_for=shapes_for or {},
    )


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "plain_text",
        (ModelTurn(text=TEXT, text_chunks=3, usage=Usage(input_tokens=12, output_tokens=6)),),
        ("text", "result success"),
        observes=("streaming_text", "usage_accuracy"),
        final_text=TEXT,
    ),
    Scenario(
        "thinking",
        (
            ModelTurn(
                thoughts=[Thought(text="**Greeting**\nThe user wants a hello.")],
                text="Hi.",
                usage=Usage(input_tokens=10, output_tokens=1, thinking_tokens=8),
            ),
        ),
        ("thinking", "text", "result success"),
        observes=("thinking",),
        alternatives={"thinking": ("text", "result success")},
        final_text="Hi.",
    ),
    Scenario(
        "one_tool_call",
        (
            ModelTurn(
                thoughts=[Thought(text="**Reading**\nRead notes.txt first.", signature="sig-thought")],
                function_calls=[NOTES.model_copy(update={"signature": "sig-call"})],
            ),
            ModelTurn(text="The notes say alpha."),
        ),
        ("thinking", "tool read_file ok", "text", "result success"),
        observes=("tool_use", "thought_signatures"),
        alternatives={"thinking": ("tool read_file ok", "text", "result success")},
        final_text="The notes say alpha.",
        texts=(
            Texts("tool_output", ("alpha\nbeta\n",), {"claude-code": ("read_output", (CLAUDE_READ["notes.txt"],))}),
        ),
    ),
    Scenario(
        "parallel_tool_calls",
        (
            ModelTurn(function_calls=[NOTES, FunctionCall(name="read_file", args={"file_path": "more.txt"})]),
            ModelTurn(text="Both read."),
        ),
        ("tool read_file ok", "tool read_file ok", "text", "result success"),
        observes=("tool_use",),
        texts=(
            Texts(
                "tool_output",
                ("alpha\nbeta\n", "gamma\n"),
                {"claude-code": ("read_output", (CLAUDE_READ["notes.txt"], CLAUDE_READ["more.txt"]))},
            ),
        ),
    ),
    Scenario(
        "failing_tool",
        (
            ModelTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": "missing.txt"})]),
            ModelTurn(text="There is no such file."),
        ),
        ("tool read_file error", "text", "result success"),
        observes=("tool_use",),
        texts=(
            Texts(
                "tool_output",
                ("File not found: missing.txt",),
                {
                    **dict.fromkeys(("gemini-cli", SJ), ("read_errors", ("File not found: {cwd}/missing.txt",))),
                    "claude-code": (
                        "read_errors",
                        ("File does not exist. Note: your current working directory is {cwd}.",),
                    ),
                    "codex": ("read_errors", ("cat: missing.txt: No such file or directory\n",)),
                },
            ),
        ),
    ),
    Scenario(
        "subagent",
        (
            ModelTurn(
                function_calls=[
                    FunctionCall(name="invoke_agent", args={"agent_name": "generalist", "prompt": "Read notes.txt."})
                ]
            ),
            ModelTurn(function_calls=[NOTES]),
            ModelTurn(function_calls=[FunctionCall(name="complete_task", args={"result": {"response": "alpha"}})]),
            ModelTurn(text="The subagent says alpha."),
        ),
        (
            "tool invoke_agent ok",
            "subagent generalist completed: (tool read_file ok, tool complete_task ok)",
            "text",
            "result success",
        ),
        observes=("subagent_lifecycle", "subagent_ids_on_deltas"),
        turns_for={
            # Claude Code's Agent tool: the subagent's requests carry its id (FakeAnthropic routes them to
            # the turns marked subagent=True); it reports back in text.
            "claude-code": (
                ModelTurn(function_calls=[CLAUDE_AGENT]),
                ModelTurn(subagent=True, function_calls=[NOTES]),
                ModelTurn(subagent=True, text="alpha"),
                ModelTurn(text="The subagent says alpha."),
            ),
            # unified's own loop: the `delegate` tool; FakeGemini serves the subagent's requests in turn.
            **dict.fromkeys(("generate-content", "interactions"), DELEGATING),
        },
        shapes_for={
            "claude-code": (
                "tool invoke_agent ok",
                "subagent general-purpose completed: (tool read_file ok, text)",
                "text",
                "result success",
            ),
            **dict.fromkeys(
                ("generate-content", "interactions"),
                (
                    "tool delegate ok",
                    "subagent delegate completed: (tool read_file ok, text)",
                    "text",
                    "result success",
                ),
            ),
        },
        differences={
            # Codex names no agents (agent_name is the child's model); a child ends its task with its
            # final message, so complete_task is that message (FakeOpenAI renders it so).
            ("codex", "subagent_lifecycle"): (
                "tool invoke_agent ok",
                f"subagent {CODEX_MODEL} completed: (tool read_file ok, text)",
                "text",
                "result success",
            )
        },
        # Headless, the CLI shows the delegation and its end only: the subagent's calls are in its chat file.
        alternatives_for={
            (SJ, "subagent_ids_on_deltas"): (
                "tool invoke_agent ok",
                "subagent generalist completed: ()",
                "text",
                "result success",
            )
        },
        alternatives={
            # Without subagents the script's turns all reach the main loop, where invoke_agent and
            # complete_task are unknown tools.
            "subagent_lifecycle": (
                "tool invoke_agent error",
                "tool read_file ok",
                "tool complete_task error",
                "text",
                "result success",
            )
        },
        approval_mode="yolo",
    ),
    Scenario(
        "permission_approved",
        (ModelTurn(function_calls=[WRITE]), ModelTurn(text="Written.")),
        ("tool write_file ok [ask permission] [allow by user]", "text", "result success"),
        observes=("permission_requests",),
        alternatives_for={(SJ, "permission_requests"): ("tool write_file error", *NOT_REGISTERED)},
        answer="allow",
        files={"new.txt": True},
        texts=(
            Texts(
                "tool_output",
                ("Successfully created and wrote to new file: new.txt.",),
                {
                    "gemini-cli": ("write_output", (CLI_WROTE,)),
                    "claude-code": ("write_output", (CLAUDE_WROTE,)),
                    "codex": ("write_output", ("Success. Updated the following files:\nA new.txt",)),
                },
            ),
        ),
    ),
    Scenario(
        "permission_denied",
        (ModelTurn(function_calls=[WRITE]), ModelTurn(text="Not written.")),
        ("tool write_file error [ask permission] [deny by user]", "text", "result success"),
        observes=("permission_requests",),
        alternatives_for={(SJ, "permission_requests"): ("tool write_file error", *NOT_REGISTERED)},
        answer="deny",
        files={"new.txt": False},
        texts=(
            Texts(
                "tool_output",
                (USER_DENIED,),
                {
                    "gemini-cli": ("denial_text", (CANCELED,)),
                    "claude-code": ("denial_text", (claude_denied("the user denied it"),)),
                    "codex": ("denial_text", (CODEX_PATCH_REJECTED,)),
                },
            ),
        ),
    ),
    Scenario(
        "permission_denied_with_message",
        (ModelTurn(function_calls=[WRITE]), ModelTurn(text="I will use staging.txt.")),
        ("tool write_file error [ask permission] [deny by user]", "text", "result success"),
        observes=("permission_requests",),
        alternatives_for={(SJ, "permission_requests"): ("tool write_file error", *NOT_REGISTERED)},
        answer="deny_with_message",
        files={"new.txt": False},
        texts=(
            Texts(
                "tool_output",
                (f"{USER_DENIED}. The user says: {DENIAL_MESSAGE}",),
                {
                    "gemini-cli": ("denial_message", (CANCELED,)),
                    "claude-code": (
                        "denial_text",
                        (f"{claude_denied('the user denied it')}. The user says: {DENIAL_MESSAGE}",),
                    ),
                    "codex": ("denial_message", (CODEX_PATCH_REJECTED,)),
                },
            ),
        ),
    ),
    Scenario(
        "permission_allowed_with_changed_input",
        (ModelTurn(function_calls=[WRITE]), ModelTurn(text="Written.")),
        ("tool write_file ok [ask permission] [allow by user]", "text", "result success"),
        observes=("permission_requests",),
        alternatives_for={(SJ, "permission_requests"): ("tool write_file error", *NOT_REGISTERED)},
        answer="allow_changed_input",
        # ACP cannot change a call's input: gemini-cli denies it instead, with a warning. Nor can Codex's
        # approval answers (accept/decline/cancel, no input): codex denies it too, with a warning.
        differences={
            (backend, "permission_requests"): (
                "tool write_file error [ask permission] [deny by user]",
                "text",
                "result success",
            )
            for backend in ("gemini-cli", "codex")
        },
        texts=(
            Texts(
                "tool_output",
                ("Successfully created and wrote to new file: new.txt.",),
                {
                    "gemini-cli": ("changed_input", (CANCELED,)),
                    "claude-code": (
                        "changed_input",
                        (
                            "File created successfully at: new.txt "
                            "The user modified your proposed content before accepting it.",
                        ),
                    ),
                    "codex": ("changed_input", (CODEX_PATCH_REJECTED,)),
                },
            ),
        ),
    ),
    Scenario(
        "permission_stops_the_run",
        (ModelTurn(function_calls=[WRITE]),),
        ("tool write_file no result [ask permission] [deny by user]", "result interrupted"),
        observes=("permission_requests",),
        # Nobody is asked headless, so nobody stops the run: the model answers the failed call.
        turns_for={SJ: (ModelTurn(function_calls=[WRITE]), ModelTurn(text="Not written."))},
        alternatives_for={(SJ, "permission_requests"): ("tool write_file error", *NOT_REGISTERED)},
        answer="stop",
        files={"new.txt": False},
    ),
    Scenario(
        "shell_every_command_denied",
        # `echo hi` is a command the CLI would run unasked ("known safe"): unified's rule makes it ask too.
        (shell("echo hi"), shell("rm victim.txt"), ModelTurn(text="Both refused.")),
        (
            "tool run_shell_command error [ask permission] [deny by user]",
            "tool run_shell_command error [ask permission] [deny by user]",
            "text",
            "result success",
        ),
        observes=("permission_requests",),
        alternatives_for={(SJ, "permission_requests"): ("tool run_shell_command error",) * 2 + NOT_REGISTERED},
        answer="deny",
        files={"victim.txt": True},
        texts=(
            Texts(
                "tool_output",
                ("Tool call run_shell_command was denied: the user denied it",) * 2,
                {
                    "gemini-cli": ("denial_text", (SHELL_CANCELED,) * 2),
                    "claude-code": ("denial_text", (claude_denied("the user denied it", "Bash"),) * 2),
                    "codex": ("denial_text", (CODEX_REJECTED,) * 2),
                },
            ),
        ),
    ),
    Scenario(
        "shell_without_a_callback_in_default_mode",
        (shell("echo hi"), shell("rm victim.txt"), ModelTurn(text="Nobody could allow them.")),
        ("tool run_shell_command error [deny]", "tool run_shell_command error [deny]", "text", "result success"),
        observes=("permission_requests",),
        alternatives_for={(SJ, "permission_requests"): ("tool run_shell_command error",) * 2 + NOT_REGISTERED},
        files={"victim.txt": True},
        texts=(
            Texts(
                "tool_output",
                (NOBODY_TO_ASK,) * 2,
                {
                    "gemini-cli": ("denial_text", (SHELL_CANCELED,) * 2),
                    "claude-code": ("denial_text", (NOBODY_TO_ASK.replace("run_shell_command", "Bash"),) * 2),
                    # Codex words every declined call alike, also one that nobody was there to answer.
                    "codex": ("denial_text", (CODEX_REJECTED,) * 2),
                },
            ),
        ),
    ),
    Scenario(
        "allow_always_covers_that_same_call_only",
        # The session rule is the API backends' one: this command's shape, no wider (the CLI's own
        # "allow always" would let `echo bye > other.txt` run unasked).
        (
            shell("echo hi > out.txt"),
            shell("echo  hi >out.txt"),
            shell("echo bye > other.txt"),
            ModelTurn(text="Two ran, one was refused."),
        ),
        (
            "tool run_shell_command ok [ask permission] [allow by user]",
            "tool run_shell_command ok",
            "tool run_shell_command error [ask permission] [deny by user]",
            "text",
            "result success",
        ),
        observes=("permission_requests",),
        alternatives_for={(SJ, "permission_requests"): ("tool run_shell_command error",) * 3 + NOT_REGISTERED},
        answer="allow_always_then_deny",
        files={"out.txt": True, "other.txt": False, "victim.txt": True},
        # Codex's acceptForSession covers that exact command line: the same command spaced otherwise asks again
        # (narrower than unified's rule, never wider).
        differences={
            ("codex", "permission_requests"): (
                "tool run_shell_command ok [ask permission] [allow by user]",
                "tool run_shell_command error [ask permission] [deny by user]",
                "tool run_shell_command error [ask permission] [deny by user]",
                "text",
                "result success",
            )
        },
        texts=(
            Texts(
                "tool_output",
                (
                    "Output: (empty)\nProcess Group PGID: N",
                    "Output: (empty)\nProcess Group PGID: N",
                    "Tool call run_shell_command was denied: the user denied it",
                ),
                {
                    "gemini-cli": (
                        "shell_output",
                        (
                            "<untrusted_context>\nOutput: (empty)\nProcess Group PGID: N\n</untrusted_context>",
                            "<untrusted_context>\nOutput: (empty)\nProcess Group PGID: N\n</untrusted_context>",
                            SHELL_CANCELED,
                        ),
                    ),
                    "claude-code": (
                        "shell_output",
                        (
                            "(Bash completed with no output)",
                            "(Bash completed with no output)",
                            claude_denied("the user denied it", "Bash"),
                        ),
                    ),
                    "codex": ("shell_output", (None, CODEX_REJECTED, CODEX_REJECTED)),
                },
            ),
        ),
    ),
    Scenario(
        "list_directory",
        (
            ModelTurn(function_calls=[FunctionCall(name="list_directory", args={"dir_path": "."})]),
            ModelTurn(text="Three files."),
        ),
        ("tool list_dir ok", "text", "result success"),
        observes=("tool_use",),
        # Claude Code has no tool that lists a directory: the call fails as one to a tool it lacks.
        shapes_for={"claude-code": ("tool list_dir error", "text", "result success")},
        texts=(
            Texts(
                "tool_output",
                ("Directory listing for .:\nmore.txt\nnotes.txt\nvictim.txt",),
                {
                    **dict.fromkeys(
                        ("gemini-cli", SJ),
                        (
                            "list_directory_output",
                            (
                                "Directory listing for {cwd}:\n"
                                "more.txt (6 bytes)\nnotes.txt (11 bytes)\nvictim.txt (7 bytes)",
                            ),
                        ),
                    ),
                    "claude-code": (
                        "no_list_directory",
                        ("<tool_use_error>Error: No such tool available: list_directory</tool_use_error>",),
                    ),
                    "codex": ("list_directory_output", ("more.txt\nnotes.txt\nvictim.txt\n",)),
                },
            ),
        ),
    ),
    Scenario(
        "replace_with_the_clis_parameters",
        (
            ModelTurn(
                function_calls=[
                    FunctionCall(
                        name="replace",
                        args={
                            "file_path": "notes.txt",
                            "old_string": "alpha",
                            "new_string": "ALPHA",
                            "instruction": "caps",
                        },
                    )
                ]
            ),
            ModelTurn(text="Edited."),
        ),
        ("tool edit_file error", "text", "result success"),
        observes=("tool_use",),
        approval_mode="yolo",
        differences={
            **{(cli, "tool_use"): ("tool edit_file ok", "text", "result success") for cli in ("gemini-cli", SJ)},
            # Codex has no replace tool: it answers the model itself and the app-server shows no item.
            ("codex", "tool_use"): ("text", "result success"),
        },
        texts=(
            Texts(
                "tool_output",
                ("Invalid parameters provided to replace. Reason: instruction: Extra inputs are not permitted",),
                {
                    **dict.fromkeys(
                        ("gemini-cli", SJ),
                        (
                            "replace_parameters",
                            (
                                "Successfully modified file: {cwd}/notes.txt (1 replacements). "
                                "Here is the updated code:\nALPHA\nbeta\n",
                            ),
                        ),
                    ),
                    "claude-code": (
                        "replace_parameters",
                        (
                            "<tool_use_error>InputValidationError: Edit failed due to the following issue:\n"
                            "An unexpected parameter `instruction` was provided</tool_use_error>",
                        ),
                    ),
                    "codex": ("unknown_tools", ()),
                },
            ),
        ),
    ),
    Scenario(
        "thought_layout",
        (ModelTurn(thoughts=[Thought(text="**Plan**\n\nFirst line.\n\nSecond line.\n")], text="Done."),),
        ("thinking", "text", "result success"),
        alternatives={"thinking": ("text", "result success")},
        texts=(
            Texts(
                "thinking",
                ("**Plan**\n\nFirst line.\n\nSecond line.\n",),
                {"gemini-cli": ("thought_layout", ("**Plan**\nFirst line.\n\nSecond line.",))},
            ),
        ),
    ),
    Scenario(
        "plan_mode_refuses_write",
        (ModelTurn(function_calls=[WRITE]), ModelTurn(text="I may not write in plan mode.")),
        ("tool write_file error [deny]", "text", "result success"),
        observes=("plan_mode",),
        # The CLI's plan-mode policy refuses it itself: no decision of unified's to show.
        differences={(SJ, "plan_mode"): ("tool write_file error", "text", "result success")},
        approval_mode="plan",
        files={"new.txt": False},
        texts=(
            Texts(
                "tool_output",
                ("Tool call write_file was denied: rule plan-denies denies it in plan mode",),
                {
                    "gemini-cli": ("denial_text", (CANCELED,)),
                    "claude-code": ("denial_text", (claude_denied("rule plan-denies denies it in plan mode"),)),
                    "codex": ("denial_text", (CODEX_PATCH_REJECTED,)),
                    SJ: ("plan_denial_text", (PLAN_REFUSED,)),
                },
            ),
        ),
    ),
    Scenario(
        "image_input",
        (ModelTurn(text="A single pixel."),),
        ("text", "result success"),
        observes=("image_input",),
        alternatives_for={(SJ, "image_input"): ("error unsupported_option fatal", "result error")},
        images=True,
    ),
    Scenario(
        "error_from_status",
        # A quota error asking for an hour's wait: every backend gives up at once instead of retrying.
        (ModelTurn(text="Never sent.", fault=Fault(kind="rate_limit", retry_delay="3600s")),),
        ("error rate_limited fatal", "result error"),
    ),
    Scenario(
        "cancelled",
        (ModelTurn(text="A slow answer that never finishes.", text_chunks=4, chunk_delay=2.0),),
        ("result cancelled",),
        observes=("cancellation",),
        cancel_after_first_event=True,
    ),
    Scenario(
        "server_side_tool",
        (),
        ("tool google_search ok", "text", "result success"),
        observes=("server_side_tools",),
        turns_for={
            # The CLI's google_web_search is a CLI tool that asks the model (generateContent) to search.
            **dict.fromkeys(
                ("gemini-cli", SJ),
                (
                    ModelTurn(function_calls=[FunctionCall(name="google_web_search", args={"query": "unified"})]),
                    ModelTurn(method="generateContent", text="unified is a Python library."),
                    ModelTurn(text="Found it."),
                ),
            ),
            "generate-content": (RecordedTurn(method="generateContentStream", response=[GROUNDED]),),
            "claude-code": (ModelTurn(text="Found it."),),
            "codex": (
                ModelTurn(
                    server_tools=[ServerTool(tool="google_search", id="s1", arguments={"query": "unified"})],
                    text="Found it.",
                ),
            ),
            "interactions": (
                InteractionTurn(
                    steps=[
                        GoogleSearchCall(id="search-1", queries=["unified"]),
                        GoogleSearchResult(call_id="search-1", search_suggestions="unified"),
                        TextStep(text="Found it."),
                    ]
                ),
            ),
        },
        # Gemini 2.5 cannot combine built-in tools with function calling (docs/api-tools.md): search alone.
        options_for={
            "generate-content": {"google_search": True, "local_tools": False},
            "interactions": {"google_search": True, "local_tools": False},
            "codex": {"web_search": "live"},  # OpenAI's hosted web search: off unless asked for
        },
        aliases={"google_web_search": "google_search", "web_search": "google_search"},
        # Claude Code's WebSearch is a client tool of its own: no server-side tool to show, the model just answers.
        alternatives={"server_side_tools": ("text", "result success")},
        # generateContent reports a search as grounding metadata, which arrives with the last chunk.
        differences={("generate-content", "server_side_tools"): ("text", "tool google_search ok", "result success")},
    ),
    Scenario(
        "mcp_tool",
        (
            ModelTurn(function_calls=[FunctionCall(name="mcp__echo__echo", args={"text": "hi"})]),
            ModelTurn(text="Echoed."),
        ),
        ("tool mcp_echo_echo ok", "text", "result success"),
        observes=("mcp",),
        turns_for=dict.fromkeys(
            ("gemini-cli", SJ),
            (
                ModelTurn(function_calls=[FunctionCall(name="mcp_echo_echo", args={"text": "hi"})]),
                ModelTurn(text="Echoed."),
            ),
        ),
        alternatives_for={(SJ, "mcp"): NO_MCP},
        approval_mode="yolo",
        mcp="stdio",
    ),
    _remote_mcp("http"),
    # Codex does not speak SSE: the run refuses it before it starts.
    _remote_mcp("sse", shapes_for={"codex": ("error unsupported_option fatal", "result error")}),
    Scenario(
        "ask_user",
        (
            ModelTurn(
                function_calls=[
                    FunctionCall(
                        name="ask_user",
                        args={
                            "questions": [
                                {
                                    "question": "Which colour?",
                                    "header": "Colour",
                                    "options": [{"label": "red"}, {"label": "blue"}],
                                }
                            ]
                        },
                    )
                ]
            ),
            ModelTurn(text="Red it is."),
        ),
        ("tool ask_user ok [ask model-tool]", "text", "result success"),
        observes=("user_input",),
        # Claude Code's AskUserQuestion takes each option's description and multiSelect too.
        turns_for={
            "claude-code": (
                ModelTurn(
                    function_calls=[
                        FunctionCall(
                            name="AskUserQuestion",
                            args={
                                "questions": [
                                    {
                                        "question": "Which colour?",
                                        "header": "Colour",
                                        "options": [
                                            {"label": "red", "description": "warm"},
                                            {"label": "blue", "description": "cold"},
                                        ],
                                        "multiSelect": False,
                                    }
                                ]
                            },
                        )
                    ]
                ),
                ModelTurn(text="Red it is."),
            )
        },
        # The gemini CLI's call is of unified's ask_user served as an MCP tool (mcp_<run's server>_ask_the_user,
        # a glob in its script: `Column.tools`); it shows as ask_user, as here.
        # Codex 0.171 lets the model ask only in its plan collaboration mode, which a plan run turns on
        # (elsewhere it refuses the call and tells the model only: the stream would show no call at all).
        approval_modes_for={"codex": "plan"},
        # Headless, unified serves no ask_user and the CLI registers none: the call fails.
        alternatives_for={(SJ, "user_input"): ("tool ask_user error", *NOT_REGISTERED)},
        answer="allow",
    ),
    Scenario(
        "image_output",
        (ModelTurn(text="Here is the picture."),),
        ("text", "result success"),
        observes=("image_output",),
        alternatives={"image_output": ("text", "result success")},
        # The generateContent wire carries the image (an inlineData part, as in the real recordings); the
        # Interactions API an image delta of a model_output step.
        turns_for={
            **{
                backend: (RecordedTurn(method="generateContentStream", response=list(IMAGE_CHUNKS)),)
                for backend in ("generate-content", "gemini-cli")
            },
            "interactions": (
                InteractionTurn(
                    steps=[TextStep(text="Here is the picture."), ImageStep(data=base64.b64encode(PNG_1x1).decode())]
                ),
            ),
        },
    ),
    Scenario(
        "background_agent",
        (ModelTurn(text="Done in the background."),),
        (f"subagent {MODEL} completed: ()", "text", "result success"),
        observes=("background_agents",),
        alternatives={"background_agents": ("text", "result success")},
        options_for={"interactions": {"background": True, "poll_interval_s": 0.01}},
        # Claude Code: a background subagent (run_in_background); the run's one result comes once it has
        # reported back (the CLI prints a result before that, and one after).
        turns_for={
            "claude-code": (
                ModelTurn(
                    function_calls=[
                        CLAUDE_AGENT.model_copy(update={"args": {**CLAUDE_AGENT.args, "run_in_background": True}})
                    ]
                ),
                ModelTurn(subagent=False, text="Launched it."),
                ModelTurn(subagent=True, text="Done in the background.", chunk_delay=0.2),
                ModelTurn(subagent=False, text="It reported back."),
            )
        },
        differences={
            ("claude-code", "background_agents"): (
                "tool invoke_agent ok",
                "subagent general-purpose completed: (text)",
                "text",
                "result success",
            )
        },
    ),
    Scenario(
        "resume_by_short_id",
        (ModelTurn(text="You said 42."),),
        ("text", "result success"),
        observes=("session_resume",),
        prompt="What number did I say?",
        first_run=FirstRun("Remember the number 42.", (ModelTurn(text="Noted."),)),
        final_text="You said 42.",
    ),
)


# --- evidence beyond the shape --------------------------------------------------------------------------


def _streaming(run: Run) -> str | None:
    deltas = [e for e in run.events if isinstance(e, TextDelta)]
    return None if len(deltas) >= 2 else f"the 3-chunk answer arrived as {len(deltas)} text_delta event(s)"


def _thinking(run: Run) -> str | None:
    thoughts = [e.text for e in run.events if isinstance(e, Thinking) and e.text]
    appended = "".join(e.text for e in run.events if isinstance(e, Thinking) and not e.replace)
    found = any("The user wants a hello." in t for t in [*thoughts, appended])
    return None if found else f"no thought summary text: {thoughts}"


def _signatures(run: Run) -> str | None:
    # Gemini signs the call; OpenAI signs the reasoning (its encrypted_content): either echoed back counts.
    signatures = (b64("sig-call"), b64("sig-thought"))
    exposed = any(isinstance(e, Thinking) and e.signature for e in run.events)
    echoed = any(signature in body for body in run.model_bodies()[1:] for signature in signatures)
    if exposed or echoed:
        return None
    return "the call's thought signature was neither exposed on a thinking event nor echoed back to the model"


def _usage(run: Run) -> str | None:
    usage = run.result.usage
    got = (usage.input_tokens, usage.output_tokens, usage.thinking_tokens, usage.estimated)
    return None if got == (12, 6, 0, False) else f"usage {got}, the server reported (12, 6, 0) exactly"


def _image(run: Run) -> str | None:
    # google-genai sends bytes URL-safe base64-encoded; both alphabets are valid on the wire.
    encodings = (base64.b64encode(PNG_1x1).decode(), base64.urlsafe_b64encode(PNG_1x1).decode())
    found = any(data in body for body in run.model_bodies() for data in encodings)
    return None if found else "the image never reached the model"


def _image_output(run: Run) -> str | None:
    images = [(e.mime_type, e.data, e.size_bytes) for e in run.events if isinstance(e, ImageOutput)]
    wanted = ("image/png", PNG_1x1, len(PNG_1x1))
    return None if images == [wanted] else f"image_output events {images}, not the {len(PNG_1x1)}-byte image/png"


def _cancellation(run: Run) -> str | None:
    if run.result.status != "cancelled":
        return f"result status {run.result.status}"
    # The scripted answer takes 8 s to stream: ending well before shows the run was really stopped.
    return None if run.seconds < 6.0 else f"the cancelled run took {run.seconds:.1f}s to end"


def _resume(run: Run) -> str | None:
    assert run.first is not None
    first, started = run.first.started, run.started
    if not started.resumed or started.short_id != first.short_id:
        return f"session_started resumed={started.resumed} short_id={started.short_id}, first run {first.short_id}"
    bodies = run.model_bodies()
    carried = bodies and ("Remember the number 42." in bodies[-1] or "previous_interaction_id" in bodies[-1])
    return None if carried else "the resumed run's model request carries neither the history nor a previous interaction"


def _permission_answers(run: Run) -> str | None:
    """A denial's message reaches the model and a changed input is what runs; where the matrix says
    `partial`, the run instead warns (`permission_answer_unsupported`) and the changed input is denied."""
    warned = any(isinstance(e, WarningEvent) and e.code == "permission_answer_unsupported" for e in run.events)
    partial = run.column.level("permission_requests") == "partial"
    by_user = [e for e in run.events if isinstance(e, PermissionDecision) and e.decided_by == "user"]
    written = run.workspace / "new.txt"
    if any(d.message == DENIAL_MESSAGE for d in by_user):
        told = any(DENIAL_MESSAGE in body for body in run.model_bodies())
        return None if told or (partial and warned) else "the denial's message reached neither the model nor a warning"
    if any(d.input is not None for d in by_user):
        if partial:
            return "a backend declared partial reports a changed input as run"
        content = written.read_text() if written.exists() else None
        return None if content == CHANGED_INPUT["content"] else f"the changed input did not run: new.txt is {content!r}"
    if warned and (not partial or written.exists()):
        return "permission_answer_unsupported from a backend that claims full support, or the call ran anyway"
    return None


CAPABILITY_CHECKS: Mapping[str, Callable[[Run], str | None]] = {
    "streaming_text": _streaming,
    "thinking": _thinking,
    "thought_signatures": _signatures,
    "usage_accuracy": _usage,
    "image_input": _image,
    "image_output": _image_output,
    "cancellation": _cancellation,
    "session_resume": _resume,
    "permission_requests": _permission_answers,
}
"""Evidence for a capability beyond the shape; capabilities not listed are shown by the shape alone."""
