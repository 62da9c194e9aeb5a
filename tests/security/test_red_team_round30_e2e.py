"""Red team, round 30: the premises of its unit cases, measured with the real programs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

pytestmark = [pytest.mark.e2e]

KEY = "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "printer",
    [
        "od -d",
        "od -An -d",
        "od -o",
        "od -An -tx4",
        "od -An -tx8",
        "od -D",
        "od -l",
        "hexdump -d",
        "hexdump -o",
        "tr A-Za-z N-ZA-Mn-za-m",
        "base32",
        "xxd | paste -s",
        "xxd | tr -d '\\n'",
        "rev | fold -w5",
        "iconv -f ascii -t utf-16le | xxd -p",
    ],
)
async def test_e2e_a_given_secret_printed_by_a_real_program_is_replaced(tmp_path: Path, printer: str) -> None:
    """SUCCEEDED before (each): the real program's output of a secret the caller handed the shell reached the tool's
    result whole."""
    from unified._redaction import REDACTED
    from unified.tools import ToolCall, ToolRuntime

    program = printer.split()[0]
    if shutil.which(program) is None or ("xxd" in printer and shutil.which("xxd") is None):
        pytest.skip(f"{program} is not installed")
    ws = tmp_path / "ws"
    ws.mkdir()
    command = f'printf "key=%s\\n" "$DEPLOY_TOKEN" | {printer}'
    async with ToolRuntime(ws, approval_mode="yolo", shell_env={"DEPLOY_TOKEN": KEY}, secrets=[KEY]) as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "run_shell_command", {"command": command})])
    shown = str(outcome.response)
    assert REDACTED in shown, shown
    ran = await anyio.run_process(["bash", "-c", command], env={"DEPLOY_TOKEN": KEY, "PATH": "/usr/bin:/bin"})
    raw = ran.stdout.decode().strip()
    assert raw  # the program printed it...
    assert raw[:24] not in shown, shown  # ...and what it printed is gone


def test_e2e_less_runs_the_lessopen_of_a_key_file_its_less_variable_names(tmp_path: Path) -> None:
    """The premise, measured: `LESS=--lesskey-src=k less a` runs the command the key file's `#env` section gives
    `LESSOPEN`, with no terminal (its output a pipe); `less a` alone does not."""
    if shutil.which("less") is None:
        pytest.skip("less is not installed")
    (tmp_path / "a").write_text("hi\n")
    (tmp_path / "k").write_text("#env\nLESSOPEN=|touch pwned; cat %s\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run(["bash", "-c", "less a | cat"], cwd=tmp_path, env=env, capture_output=True, check=False)
    assert not (tmp_path / "pwned").exists()
    subprocess.run(
        ["bash", "-c", "LESS=--lesskey-src=k less a | cat"], cwd=tmp_path, env=env, capture_output=True, check=False
    )
    assert (tmp_path / "pwned").exists()


def test_e2e_flock_and_script_run_the_shell_their_variable_names(tmp_path: Path) -> None:
    """The premise, measured: `SHELL=./x flock l -c true` and `SHELL=./x script -qc true /dev/null` run ./x."""
    for program in ("flock", "script"):
        if shutil.which(program) is None:
            pytest.skip(f"{program} is not installed")
    shell = tmp_path / "x"
    shell.write_text('#!/bin/sh\necho ran >> pwned\nexec /bin/sh "$@"\n')
    shell.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for command in ("SHELL=./x flock l -c true", "SHELL=./x script -qc true /dev/null"):
        subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, check=False)
    assert (tmp_path / "pwned").read_text().split() == ["ran", "ran"]


NODE_URLS = [
    "http://169.254.169.254\\@example.com/latest/meta-data/",
    "http://127.0.0.1:8080\\@example.com/admin",
    "https://[::1]\\@example.com/",
    "http:\\\\127.0.0.1\\",
    "http://ex\tample.com/",
    "http://0x7f.1/",
    "http://2130706433/",
    "http://example.com\\\\@169.254.169.254/",
    "http://127.0.0.1\u00ad/",
    "http://169.254.169.254\ufe0f/",
    "http://0x7f\u200b.1/",
]


def test_e2e_node_reads_each_url_s_host_as_unified_judges_it() -> None:
    """The premise, measured with the Node the Claude CLI runs on: `new URL(u).hostname` is a host `_urls._hosts`
    judges (round 30: Node read `169.254.169.254` where urlsplit read `example.com`)."""
    from unified import _urls

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = "for (const u of JSON.parse(process.argv[1])) console.log(new URL(u).hostname)"
    ran = subprocess.run([node, "-e", script, json.dumps(NODE_URLS)], capture_output=True, text=True, check=True)
    for url, hostname in zip(NODE_URLS, ran.stdout.splitlines(), strict=True):
        read = _urls._ip_address(hostname.strip("[]")) or hostname
        judged = [_urls._ip_address(h) or h for h in _urls._hosts(url)]
        assert read in judged, (url, hostname, judged)
        if url != "http://ex\tample.com/":
            assert _urls.local_target(url) is not None, url
