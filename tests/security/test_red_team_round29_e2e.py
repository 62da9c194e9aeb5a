"""Red team, round 29: the premises of its unit cases, measured with the real programs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e]


def test_e2e_git_grep_magic_pathspec_reads_above_the_workspace(tmp_path: Path) -> None:
    """The premise, measured: in a folder of a repository, `git grep x -- ':/'` prints a file above it; plain
    `git grep x` does not."""
    repo = tmp_path / "repo"
    (repo / "ws").mkdir(parents=True)
    (repo / "top.env").write_text("TOKEN=outside\n")
    (repo / "ws" / "a.txt").write_text("hi\n")
    git = ["git", "-c", "user.email=a@b.c", "-c", "user.name=n"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "x"], check=True)
    ws = repo / "ws"
    magic = subprocess.run(["git", "grep", "TOKEN", "--", ":/"], cwd=ws, capture_output=True, text=True, check=False)
    plain = subprocess.run(["git", "grep", "TOKEN"], cwd=ws, capture_output=True, text=True, check=False)
    assert "outside" in magic.stdout
    assert plain.stdout == ""


@pytest.mark.anyio
@pytest.mark.parametrize(
    "printer",
    ["xxd", "od -c", "hexdump -C", "od -x", "od -b", "xxd -i", "base64 | base64", "sed 's/./&\\t/g'", "sed 's/./&,/g'"],
)
async def test_e2e_a_given_secret_printed_by_a_real_dumper_is_replaced(tmp_path: Path, printer: str) -> None:
    """SUCCEEDED before (each): the real program's output of a secret the caller handed the shell reached the tool's
    result whole (its hex or characters cut by offsets, separators, or encoded twice)."""
    from unified._redaction import REDACTED
    from unified.tools import ToolCall, ToolRuntime

    key = "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
    ws = tmp_path / "ws"
    ws.mkdir()
    command = f'printf "key=%s\\n" "$DEPLOY_TOKEN" | {printer}'
    async with ToolRuntime(ws, approval_mode="yolo", shell_env={"DEPLOY_TOKEN": key}, secrets=[key]) as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "run_shell_command", {"command": command})])
    shown = str(outcome.response)
    assert REDACTED in shown, shown
    for piece in (key[4:12], key[14:22], key[28:36]):
        assert piece not in shown, shown
