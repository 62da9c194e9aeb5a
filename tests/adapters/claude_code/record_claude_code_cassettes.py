"""Re-record cassettes/claude-code/*.jsonl from the real binary, offline, against FakeAnthropic.

Run: `.venv/bin/python tests/adapters/claude_code/record_claude_code_cassettes.py` (needs .claude-code/).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))  # run as a script

from tests.e2e.claude_code.claude_code_helpers import LOCAL_BINARY  # noqa: E402
from unified.testing import FunctionCall, ModelTurn, Thought, Turn, Usage  # noqa: E402

SOURCE = "real @anthropic-ai/claude-code 2.1.332 binary (stream-json) against unified's FakeAnthropic on 127.0.0.1"
QUESTION = {
    "questions": [
        {
            "question": "Which colour?",
            "header": "Colour",
            "options": [{"label": "red", "description": "warm"}, {"label": "blue", "description": "cold"}],
            "multiSelect": False,
        }
    ]
}
AGENT = {"description": "Read the notes", "prompt": "Read notes.txt.", "subagent_type": "general-purpose"}
SCENARIOS: dict[str, tuple[str, list[Turn]]] = {
    "text-thinking": (
        "default",
        [
            ModelTurn(
                thoughts=[Thought(text="The user wants a hello.", signature="SIG-demo-1")],
                text="Hello there.",
                text_chunks=2,
                usage=Usage(input_tokens=40, cached_tokens=10, output_tokens=3, thinking_tokens=5),
            )
        ],
    ),
    "tools-permission": (
        "default",
        [
            ModelTurn(
                function_calls=[
                    FunctionCall(name="Read", args={"file_path": "notes.txt"}, id="toolu_read"),
                    FunctionCall(name="Write", args={"file_path": "b.txt", "content": "x\n"}, id="toolu_write"),
                ]
            ),
            ModelTurn(text="Done."),
        ],
    ),
    "subagent": (
        "yolo",
        [
            ModelTurn(function_calls=[FunctionCall(name="Agent", args={**AGENT, "run_in_background": False})]),
            ModelTurn(subagent=True, function_calls=[FunctionCall(name="Read", args={"file_path": "notes.txt"})]),
            ModelTurn(subagent=True, text="alpha"),
            ModelTurn(text="It says alpha."),
        ],
    ),
    "question": (
        "default",
        [
            ModelTurn(function_calls=[FunctionCall(name="AskUserQuestion", args=QUESTION, id="toolu_ask")]),
            ModelTurn(text="Red it is."),
        ],
    ),
}


async def record(name: str, mode: str, turns: list[Turn], base: Path) -> None:
    from unified import ExecuteParams, UserInputRequest, UserInputResponse
    from unified.testing import FakeAnthropic
    from unified.testing._record import record_run
    from unified.testing._wiring import backend_options_for

    workspace = base / name
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\n")

    async def answer(request: UserInputRequest) -> UserInputResponse:
        if request.source == "model-tool":
            return UserInputResponse(answers={q.id: q.options[0].id for q in request.questions})
        return UserInputResponse.allow()

    async with FakeAnthropic(turns) as server:
        params = ExecuteParams(
            prompt="go",
            backend="claude-code",
            cwd=workspace,
            approval_mode=mode,
            on_user_input=answer,
            backend_options=backend_options_for(server, "claude-code", cli_home=base / "home"),
        )
        await record_run(params, ROOT / "cassettes" / "claude-code" / f"{name}.jsonl", source=SOURCE)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        os.environ.update(HOME=str(base), XDG_DATA_HOME=str(base / "data"), XDG_CACHE_HOME=str(base / "cache"))
        os.environ.setdefault("UNIFIED_CLAUDE_BIN", str(LOCAL_BINARY))
        for name, (mode, turns) in SCENARIOS.items():
            await record(name, mode, turns, base)
            print("recorded", name)


if __name__ == "__main__":
    anyio.run(main)
