"""unified's key loader (`key_loader.cjs`) on the real node: the credentials `start_gemini` pipes to a node
process reach its `process.env` and nowhere a command it runs could read them later: not its exec
environment (`/proc/<pid>/environ`), not a pipe still open in it, not the environment or the descriptors of
what it starts. A handover that breaks is an exit with the loader's reason, never a CLI without its key.

A stand-in for the CLI (`node -e`) says what it sees; the test reads its /proc from outside, as a model's
command would (docs/backends/gemini-cli.md, "Keys and the model's commands")."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.environ_attack import pieces
from tests.hang_guard import HANG_GUARD_S
from unified._adapters.gemini_cli._launch import ENV_FD_VAR, KEY_LOADER, KEY_LOADER_EXIT, start_gemini
from unified._adapters.gemini_cli._outcome import error_from_exit
from unified._binary.process import AgentSubprocess

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.parametrize("anyio_backend", ["asyncio"]),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

GEMINI_KEY = "AIzaSyB-k3Yl0aD8Er5Pi2Pe6Fd9Ws4Tr7Ux1Qz"
GOOGLE_KEY = "gk-Lo4Ad3Er7Pi1Pe9Fd2Ws6Tr8Ux5Qz0Mn"
CREDENTIALS = "/somewhere/adc.json"
STAND_IN = r"""
const fs = require("node:fs");
const handover = fs.readFileSync("/proc/self/environ", "latin1").match(/UNIFIED_GEMINI_ENV_FD=([0-9]+)/);
let handoverFd = null;
try {
  handoverFd = handover && fs.readlinkSync(`/proc/self/fd/${handover[1]}`);
} catch (error) {
  handoverFd = error.code;
}
const { execFileSync } = require("node:child_process");
const child = execFileSync("sh", ["-c", "env; echo '--- fds'; ls /proc/self/fd"]).toString();
process.stdout.write(JSON.stringify({
  pid: process.pid,
  gemini: process.env.GEMINI_API_KEY,
  google: process.env.GOOGLE_API_KEY,
  credentials: process.env.GOOGLE_APPLICATION_CREDENTIALS,
  fdVar: process.env.UNIFIED_GEMINI_ENV_FD ?? null,
  nodeOptions: process.env.NODE_OPTIONS ?? null,
  handoverFd,
  child,
  listed: Object.keys(process.env).filter((name) => /API_KEY|CREDENTIALS/.test(name)),
  spread: Object.keys({ ...process.env }).filter((name) => /API_KEY|CREDENTIALS/.test(name)),
  has: "GEMINI_API_KEY" in process.env && Object.hasOwn(process.env, "GOOGLE_API_KEY"),
}) + "\n");
process.stdin.on("data", () => {});
process.stdin.on("end", () => process.exit(0));
"""
"""Says what it got, what a command it starts gets, then waits (its /proc read from outside) until stdin ends."""


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH (the gemini CLI needs it)")
    return node


def _readable_pipes(pid: int) -> dict[int, bytes]:
    """What a reader gets now from each pipe the process holds besides its stdio, opened through /proc without
    blocking (as a model's `cat /proc/$PPID/fd/N` would; never its stdio, which the test itself reads)."""
    stdio = {os.readlink(f"/proc/{pid}/fd/{n}") for n in (0, 1, 2)}
    found: dict[int, bytes] = {}
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
            if not target.startswith("pipe:") or target in stdio:
                continue
            fd = os.open(f"/proc/{pid}/fd/{name}", os.O_RDONLY | os.O_NONBLOCK)
        except OSError:  # closed meanwhile, or the write end of a pipe
            continue
        try:
            found[int(name)] = os.read(fd, 65536)
        except BlockingIOError:
            found[int(name)] = b""
        finally:
            os.close(fd)
    return found


@contextlib.asynccontextmanager
async def stand_in(tmp_path: Path, env: dict[str, str]) -> AsyncIterator[dict[str, Any]]:
    """The stand-in started as `start_gemini` starts the CLI with `env`: what it says it saw, while it waits
    (its /proc can be read); ended on the way out."""
    process = start_gemini([_node(), "-e", STAND_IN], tmp_path, env)
    try:
        with anyio.fail_after(HANG_GUARD_S):
            line = await process.receive()
        assert line is not None, process.stderr_tail()
        seen: dict[str, Any] = json.loads(line)
        yield seen
    finally:
        await process.close()


async def test_piped_credentials_reach_process_env_and_no_place_a_command_can_read_later(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "NODE_OPTIONS": "--max-old-space-size=999",
        "GEMINI_API_KEY": GEMINI_KEY,
        "GOOGLE_API_KEY": GOOGLE_KEY,
        "GOOGLE_APPLICATION_CREDENTIALS": CREDENTIALS,
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }
    async with stand_in(tmp_path, env) as seen:
        assert (seen["gemini"], seen["google"], seen["credentials"]) == (GEMINI_KEY, GOOGLE_KEY, CREDENTIALS)
        assert seen["fdVar"] is None  # the loader took its variable out
        assert seen["handoverFd"] == "ENOENT"  # and closed the pipe before the CLI's first line
        assert seen["nodeOptions"] == "--max-old-space-size=999"  # the caller's, without our --require
        child = seen["child"]
        for secret in (GEMINI_KEY, GOOGLE_KEY, CREDENTIALS):  # what it starts inherits none of them...
            assert pieces(secret, child) == [], child
        assert seen["has"] is True  # ...which it reads by name (its .env loading asks whether one is set)
        assert seen["listed"] == seen["spread"] == []  # but never lists: each child's environment is a listing
        assert ENV_FD_VAR not in child
        assert str(KEY_LOADER) not in child  # a node the model runs loads nothing of ours
        # the key's pipe is not passed on: stdio and the listing's own folder only
        assert set(child.split("--- fds")[1].split()) <= {"0", "1", "2", "3"}, child
        environ = (await anyio.Path(f"/proc/{seen['pid']}/environ").read_bytes()).decode(errors="replace")
        assert f"{ENV_FD_VAR}=" in environ  # the key went by pipe...
        for secret in (GEMINI_KEY, GOOGLE_KEY, CREDENTIALS):
            assert pieces(secret, environ) == [], secret  # ...and never into the exec environment
        pipes = _readable_pipes(seen["pid"])
        held = b"".join(pipes.values()).decode(errors="replace")
        assert pieces(GEMINI_KEY, held) == [], pipes
        assert pieces(GOOGLE_KEY, held) == [], pipes


async def test_a_cli_allowed_to_relaunch_itself_passes_the_key_to_its_second_process(tmp_path: Path) -> None:
    """A caller who lets the CLI relaunch itself (`GEMINI_CLI_NO_RELAUNCH` empty): its second node process,
    started with the first's environment, must authenticate, so the key is not hidden from children there
    (docs/backends/gemini-cli.md, "What remains")."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GEMINI_API_KEY": GEMINI_KEY,
        "GEMINI_CLI_NO_RELAUNCH": "",
    }
    async with stand_in(tmp_path, env) as seen:
        assert seen["gemini"] == GEMINI_KEY
        assert f"GEMINI_API_KEY={GEMINI_KEY}" in seen["child"]
        assert seen["listed"] == ["GEMINI_API_KEY"]


@pytest.mark.parametrize("handover", ["not-a-number", "250"])
async def test_a_broken_handover_stops_node_with_the_loaders_reason(tmp_path: Path, handover: str) -> None:
    """A descriptor that is no pipe of ours (a number that is not one, or one not open): node exits before any
    code of the CLI runs, with a code unified explains, instead of running without the key."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "NODE_OPTIONS": f'--require "{KEY_LOADER}"',
        ENV_FD_VAR: handover,
    }
    process = AgentSubprocess([_node(), "-e", "console.log('the CLI ran')"], cwd=tmp_path, env=env)
    try:
        with anyio.fail_after(HANG_GUARD_S):
            assert await process.receive() is None
        code = await process.wait(HANG_GUARD_S)
        assert code == KEY_LOADER_EXIT
        tail = process.stderr_tail()
        assert "key loader could not read its credentials" in tail, tail
        error = error_from_exit(code, tail, "gemini --acp failed to start")
        assert "unified's key loader" in str(error)
    finally:
        await process.close()
