"""Re-record cassettes/gemini-cli/*.jsonl from the real binary (offline, --fake-responses).

Run: `.venv/bin/python tests/adapters/gemini_cli/record_gemini_cli_cassettes.py` (needs .gemini-cli/).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))  # run as a script: `python tests/adapters/gemini_cli/record_gemini_cli_cassettes.py`

from tests.e2e.gemini_cli.gemini_cli_helpers import LOCAL_BINARY, call, stream_line, text, thought  # noqa: E402

SOURCE = "real @google/gemini-cli 0.61.0 binary (`gemini --acp`) against --fake-responses, not Google's servers"
SCENARIOS: dict[str, tuple[str, list[str]]] = {
    "text-thoughts": ("default", [stream_line(thought("**Planning**\nSay hi."), text("Hello there."))]),
    "tools-permission": (
        "default",
        [
            stream_line(call("read_file", file_path="notes.txt"), call("write_file", file_path="b.txt", content="x")),
            stream_line(text("Done.")),
        ],
    ),
    "plan-denied": (
        "plan",
        [stream_line(call("write_file", file_path="c.txt", content="x")), stream_line(text("No."))],
    ),
    "subagent": (
        "yolo",
        [
            stream_line(call("invoke_agent", agent_name="generalist", prompt="read notes.txt")),
            stream_line(call("read_file", file_path="notes.txt")),
            stream_line(call("complete_task", result={"response": "alpha"})),
            stream_line(text("It says alpha.")),
        ],
    ),
}


async def record(name: str, mode: str, lines: list[str], base: Path) -> None:
    from unified import ExecuteParams, UserInputRequest, UserInputResponse
    from unified.testing._record import record_run

    workspace = base / name
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\n")
    fake = base / f"{name}.responses"
    fake.write_text("\n".join(lines) + "\n")

    async def allow(request: UserInputRequest) -> UserInputResponse:
        return UserInputResponse.allow()

    params = ExecuteParams(
        prompt="go",
        backend="gemini-cli",
        cwd=workspace,
        approval_mode=mode,
        on_user_input=allow,
        backend_options={"fake_responses": str(fake)},
    )
    # record_run scrubs every line and keeps the chat-file records (tool arguments and outputs).
    await record_run(params, ROOT / "cassettes" / "gemini-cli" / f"{name}.jsonl", source=SOURCE)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        home = base / "home"
        (home / ".gemini").mkdir(parents=True)
        settings = {"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}}}
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
        os.environ.update(HOME=str(home), GEMINI_CLI_HOME=str(home), GEMINI_API_KEY="dummy")
        os.environ.update(XDG_CACHE_HOME=str(base / "cache"), UNIFIED_GEMINI_BIN=str(LOCAL_BINARY))
        for name, (mode, lines) in SCENARIOS.items():
            await record(name, mode, lines, base)


if __name__ == "__main__":
    anyio.run(main)
