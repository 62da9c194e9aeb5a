"""The codex cassettes in cassettes/codex/: what each was recorded from, and how to record them again.

    UNIFIED_CODEX_BIN=.codex-cli/node_modules/.bin/codex .venv/bin/python -m tests.e2e.codex.cassette_scenarios

records every one with the real pinned binary against FakeOpenAI (in a throwaway HOME and Codex home),
overwriting cassettes/codex/*.jsonl. tests/e2e/codex/test_codex_cassettes.py records each again into a
temporary file and checks that the committed cassette replays to the same stream as the live run.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from unified.events import UnifiedEvent, UserInputResponse
from unified.testing import CODEX_MODEL, FakeOpenAI, FunctionCall, ModelTurn, Thought, Turn, Usage, record_run
from unified.testing._wiring import backend_options_for
from unified.types import ApprovalMode, ExecuteParams

CASSETTES = Path(__file__).resolve().parents[3] / "cassettes" / "codex"
SOURCE = (
    "the real @openai/codex 0.171.0 binary (`codex app-server`) against unified's FakeOpenAI on 127.0.0.1, "
    "not OpenAI's servers"
)


@dataclass(frozen=True)
class CassetteScenario:
    name: str
    prompt: str
    turns: Sequence[Turn]
    approval_mode: ApprovalMode = "default"
    answers: Sequence[UserInputResponse] = field(default_factory=tuple)
    files: dict[str, str] = field(default_factory=dict)


SCENARIOS = (
    CassetteScenario(
        "text-reasoning",
        "Say hello.",
        (
            ModelTurn(
                thoughts=[Thought(text="The user wants a greeting.", signature="enc-greeting")],
                text="Hello from Codex.",
                text_chunks=3,
                usage=Usage(input_tokens=40, cached_tokens=10, output_tokens=4, thinking_tokens=6),
            ),
        ),
    ),
    CassetteScenario(
        "tools-permission",
        "Read notes.txt, log it, then write a summary.",
        (
            ModelTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"}, id="call_read")]),
            ModelTurn(
                function_calls=[
                    FunctionCall(name="run_shell_command", args={"command": "echo alpha >> log.txt"}, id="call_log")
                ]
            ),
            ModelTurn(
                function_calls=[
                    FunctionCall(
                        name="write_file", args={"file_path": "summary.txt", "content": "alpha\n"}, id="call_write"
                    )
                ]
            ),
            ModelTurn(text="Logged it; the summary was refused.", usage=Usage(input_tokens=90, output_tokens=8)),
        ),
        answers=(UserInputResponse.allow(), UserInputResponse.deny()),
        files={"notes.txt": "alpha\n"},
    ),
    CassetteScenario(
        "subagent",
        "Ask a helper to read notes.txt.",
        (
            ModelTurn(
                function_calls=[
                    FunctionCall(
                        name="invoke_agent", args={"agent_name": "helper", "prompt": "Read notes.txt."}, id="call_spawn"
                    )
                ]
            ),
            ModelTurn(
                function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"}, id="call_child_read")]
            ),
            ModelTurn(
                function_calls=[FunctionCall(name="complete_task", args={"result": {"response": "It says alpha."}})]
            ),
            ModelTurn(text="The helper says alpha."),
        ),
        approval_mode="yolo",
        files={"notes.txt": "alpha\n"},
    ),
)


async def record(scenario: CassetteScenario, path: Path, workspace: Path) -> list[UnifiedEvent]:
    for name, text in scenario.files.items():
        (workspace / name).write_text(text)
    answers = list(scenario.answers)

    async def answer(request: object) -> UserInputResponse:
        return answers.pop(0) if answers else UserInputResponse.deny()

    async with FakeOpenAI(list(scenario.turns)) as server:
        params = ExecuteParams(
            prompt=scenario.prompt,
            backend="codex",
            model=CODEX_MODEL,
            cwd=workspace,
            approval_mode=scenario.approval_mode,
            on_user_input=answer,
            backend_options=backend_options_for(server, "codex"),
        )
        return await record_run(params, path, source=SOURCE)


async def main() -> None:
    for scenario in SCENARIOS:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            os.environ.update({"HOME": str(root / "home"), "XDG_DATA_HOME": str(root / "data")})
            workspace = root / scenario.name
            workspace.mkdir()
            events = await record(scenario, CASSETTES / f"{scenario.name}.jsonl", workspace)
            print(scenario.name, [e.type for e in events])


if __name__ == "__main__":
    anyio.run(main)
