"""`unified demo`: one built-in task, run through the real adapters of every backend, offline.

A throwaway workspace, a throwaway CLI home and data directory, and one script that thinks, lists
the workspace, reads a file and answers, played by FakeGemini for the Google backends and by
FakeOpenAI (the same script as the OpenAI Responses API) for codex. The model is scripted;
everything else is real: the `gemini` and `codex` binaries with their own tools, the google-genai
SDK over HTTP on 127.0.0.1, `unified`'s tool runtime and policy, the stream guard. The streams come
out the same shape.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from unified._execute import execute
from unified.events import Result, ToolUse, UnifiedEvent
from unified.testing import CODEX_MODEL, FakeGemini, FakeOpenAI, FunctionCall, ModelTurn, Thought, Usage
from unified.testing._wiring import backend_options_for
from unified.types import BackendName, ExecuteParams

__all__ = ["ANSWER", "NOTES", "PROMPT", "DemoRun", "run_demo", "script"]

PROMPT = "What is in this project, and what do the notes say?"
NOTES = "Ship the adapter layer on Friday.\nBenchmarks first.\n"
ANSWER = "The project holds a README and notes.txt. The notes say: ship the adapter layer on Friday, benchmarks first."


def script() -> list[ModelTurn]:
    """Three model turns: look around, read, answer (with real thought-summary shapes and usage)."""
    return [
        ModelTurn(
            thoughts=[Thought(text="**Looking around**\n\nList the workspace before answering.", signature="demo-1")],
            function_calls=[FunctionCall(name="list_directory", args={"dir_path": "."})],
            usage=Usage(input_tokens=812, output_tokens=9, thinking_tokens=14),
        ),
        ModelTurn(
            function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"})],
            usage=Usage(input_tokens=870, output_tokens=11),
        ),
        ModelTurn(text=ANSWER, text_chunks=4, usage=Usage(input_tokens=931, output_tokens=27)),
    ]


@dataclass
class DemoRun:
    backend: str
    events: list[UnifiedEvent]

    @property
    def result(self) -> Result | None:
        last = self.events[-1] if self.events else None
        return last if isinstance(last, Result) else None

    @property
    def tools(self) -> list[str]:
        return [e.name for e in self.events if isinstance(e, ToolUse)]


async def run_demo(backends: tuple[BackendName, ...], show: Callable[[str, UnifiedEvent], None]) -> list[DemoRun]:
    """Run the task on each backend in turn, passing every event to `show` as it arrives."""
    runs: list[DemoRun] = []
    with tempfile.TemporaryDirectory(prefix="unified-demo-") as tmp:
        root = Path(tmp)
        previous = os.environ.get("UNIFIED_DATA_DIR")
        os.environ["UNIFIED_DATA_DIR"] = str(root / "data")  # the demo's sessions stay in the temp dir
        try:
            for backend in backends:
                workspace = root / backend / "project"
                workspace.mkdir(parents=True)
                (workspace / "README.md").write_text("# demo project\n")
                (workspace / "notes.txt").write_text(NOTES)
                events: list[UnifiedEvent] = []
                server_type = FakeOpenAI if backend == "codex" else FakeGemini
                async with server_type(script()) as server:
                    options = backend_options_for(server, backend, cli_home=root / backend / "home")
                    params = ExecuteParams(
                        prompt=PROMPT,
                        backend=backend,
                        model=CODEX_MODEL if backend == "codex" else "gemini-2.5-flash",
                        cwd=workspace,
                        approval_mode="default",
                        total_timeout_s=60,
                        backend_options=options,
                    )
                    async with execute(params) as stream:
                        async for event in stream:
                            events.append(event)
                            show(backend, event)
                runs.append(DemoRun(backend, events))
        finally:
            if previous is None:
                os.environ.pop("UNIFIED_DATA_DIR", None)
            else:
                os.environ["UNIFIED_DATA_DIR"] = previous
    return runs
