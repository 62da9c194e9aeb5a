"""The host's own environment, read by a command the model runs through an agent binary (the binary backends'
`hide_host_environment` option; docs/backends/claude-code.md, "Keys and the model's commands").

unified's process is the binary's parent: a command of the same user can read `/proc/<unified's pid>/environ`,
the environment unified started with, unless unified is not dumpable. Root reads any process, and a key set in
the test's own process after its start (`monkeypatch.setenv`) is not in that file: so the host here is a child
Python started with the keys in its environment, as `nobody` when the tests run as root (round 17's probe, for
the tool runtime: tests/security/test_red_team_round17.py). It runs one backend against its fake model server in
yolo, one run for each `hide_host_environment` value asked for, in order (one host, not one a value: a host is a
Python start importing unified); the model runs a command printing the host's environ (and its own errors); what
the model was sent after the command (the binary's tool result) is returned, a text a run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import unified
from tests.e2e.environ_attack import pieces
from tests.hang_guard import HANG_GUARD_S
from tests.harness.another_user import not_root_prefix

__all__ = ["HOST_KEYS", "check_host_environ", "host_environ_probe"]

HOST_KEYS = {
    "GEMINI_API_KEY": "AIzaSyH-h0stEnv1r0n5Qz8Lm3Xv7Tn1Wk4Rb6Yc",
    "ANTHROPIC_API_KEY": "sk-ant-api03-H0stEnv-Xq8Zr1Lm6Vt9Kb4Wc7Hd2Jp5Gs0Ya3Ue8Oi1Qw6Er4AA",
    "OPENAI_API_KEY": "sk-proj-H0stEnv-Nf3Xq8Zr1Lm6Vt9Kb4Wc7Hd2Jp5Gs0Ya3Ue8Oi1Qw6Er4Ty9T3BlbkFJ",
}
"""The keys the host process starts with, none of them the run's own (each backend gets its run's key in its
options): the command can only find them in unified's environ."""

_PROBE = r"""
import anyio, json, os, sys
from pathlib import Path
from unified import ExecuteParams
from unified._execute import EventStream
from unified.testing import CODEX_MODEL, FakeAnthropic, FakeGemini, FakeOpenAI, FunctionCall, ModelTurn
from unified.testing._wiring import backend_options_for

backend, workspace, cli_home, *modes = sys.argv[1:]
command = (
    "{ tr '\\0' '\\n' < /proc/%d/environ; } 2>&1 | grep -a -E '_KEY=|denied|^HOME='; echo '--- end'" % os.getpid()
)
name = "Bash" if backend == "claude-code" else "run_shell_command"
args = {"command": command, "description": "environ"} if backend == "claude-code" else {"command": command}
turns = [ModelTurn(function_calls=[FunctionCall(name=name, args=args)]), ModelTurn(text="ok")]
fake = {"claude-code": FakeAnthropic, "codex": FakeOpenAI, "gemini-cli": FakeGemini}[backend]

async def run(hide):
    async with fake(turns) as server:
        options = backend_options_for(server, backend, cli_home=Path(cli_home) if backend == "gemini-cli" else None)
        options["pool_size"] = 0
        if hide:
            options["hide_host_environment"] = hide == "1"
        params = ExecuteParams(
            prompt="show me the environment", backend=backend, cwd=Path(workspace), approval_mode="yolo",
            backend_options=options, model=CODEX_MODEL if backend == "codex" else None,
        )
        async with EventStream(params) as stream:
            events = [event async for event in stream]
        bodies = [str(request.body) for request in server.requests]
    return {"status": events[-1].status, "error": events[-1].error, "sent": "\n".join(bodies[1:])}

async def main():
    print(json.dumps([await run(hide) for hide in modes]))

anyio.run(main)
"""


def host_environ_probe(backend: str, *hides: bool | None) -> list[str]:
    """What the model was sent after its command read unified's environ, a run for each of `hides` in order (the
    option's value, None: not given)."""
    place = Path(tempfile.mkdtemp(prefix="unified-hostenv-"))
    try:
        place.chmod(0o777)
        for folder in ("ws", "home", "data", "cli-home"):
            (place / folder).mkdir(mode=0o777)
            (place / folder).chmod(0o777)
        prefix = not_root_prefix()
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(place / "home"),
            "UNIFIED_DATA_DIR": str(place / "data"),
            "PYTHONPATH": str(Path(unified.__file__).parents[1]),
            **{name: os.environ[name] for name in os.environ if name.startswith("UNIFIED_") and name.endswith("_BIN")},
            **HOST_KEYS,
        }
        modes = ["" if hide is None else "1" if hide else "0" for hide in hides]
        arguments = [backend, str(place / "ws"), str(place / "cli-home"), *modes]
        host = subprocess.Popen(
            [*prefix, sys.executable, "-c", _PROBE, *arguments],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, err = host.communicate(timeout=HANG_GUARD_S)
        assert host.returncode == 0, err
        runs = json.loads(out.splitlines()[-1])
        assert len(runs) == len(hides), runs
        for seen in runs:
            assert seen["status"] == "success", seen
            assert "--- end" in seen["sent"], seen  # the command ran to its end and the model got its output
        return [str(seen["sent"]) for seen in runs]
    finally:
        shutil.rmtree(place, ignore_errors=True)


def check_host_environ(backend: str) -> None:
    """Opted out (`hide_host_environment=False`), the model reads every key whole (the binary passes the command's
    output on as it is: nothing of unified's redacts it); by default (the option not given) the command's read of
    unified's environ is refused and the model is sent no 8-character piece of a host key. One host, the opted-out
    run first: the default makes the host undumpable for good."""
    opted_out, sent = host_environ_probe(backend, False, None)
    assert "Permission denied" not in opted_out, opted_out
    for key in HOST_KEYS.values():
        assert key in opted_out, opted_out
    assert "/environ: Permission denied" in sent, sent
    for name, key in HOST_KEYS.items():
        assert pieces(key, sent) == [], name
