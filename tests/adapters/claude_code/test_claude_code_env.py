"""What the `claude` child gets: an allowlisted environment, an isolated home, the flags of a run."""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path

import pytest

from unified._adapters.claude_code._key_file import key_file, lease
from unified._adapters.claude_code._launch import CLAUDE_CODE, Launch, claude_env, default_home, key_helper
from unified._adapters.claude_code._options import claude_code_options
from unified.types import ExecuteParams, HttpMcpServer, StdioMcpServer, ThinkingConfig

PARENT = {
    "PATH": "/usr/bin",
    "LANG": "C.UTF-8",
    "HOME": "/home/someone",
    "ANTHROPIC_API_KEY": "sk-ant-api03-parent-key-000000000000",
    "ANTHROPIC_BASE_URL": "http://gateway.example",
    "CLAUDE_CODE_USE_BEDROCK": "1",
    "AWS_REGION": "eu-west-1",
    "CLOUD_ML_REGION": "us-east5",
    "HTTPS_PROXY": "http://proxy:3128",
    "CLAUDE_CONFIG_DIR": "/home/someone/.claude",
    "GEMINI_API_KEY": "AIza-not-for-claude-000000000000000000",
    "OPENAI_API_KEY": "sk-openai-not-for-claude",
    "UNIFIED_SESSION_STORE_URL": "postgresql://user:secret@db/sessions",
    "GITHUB_TOKEN": "ghp_not_for_claude",
    "RANDOM_SETTING": "x",
}


def test_the_child_gets_claudes_variables_only_and_an_isolated_home(tmp_path: Path) -> None:
    env = claude_env(claude_code_options({"max_retries": 2}), tmp_path / "home", parent=PARENT)
    for name in ("PATH", "LANG", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_USE_BEDROCK", "AWS_REGION"):
        assert env[name] == PARENT[name]
    assert env["CLOUD_ML_REGION"] == "us-east5"
    assert env["HTTPS_PROXY"] == "http://proxy:3128"
    for name in ("GEMINI_API_KEY", "OPENAI_API_KEY", "UNIFIED_SESSION_STORE_URL", "GITHUB_TOKEN", "RANDOM_SETTING"):
        assert name not in env
    assert env["HOME"] == str(tmp_path / "home")
    assert env["CLAUDE_CONFIG_DIR"] == str(tmp_path / "home" / ".claude"), "never the caller's own Claude home"
    assert env["CLAUDE_CODE_TMPDIR"] == str(tmp_path / "home" / "tmp")
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "2"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["DISABLE_TELEMETRY"] == env["DISABLE_AUTOUPDATER"] == env["DISABLE_ERROR_REPORTING"] == "1"


def test_the_env_option_is_passed_as_given(tmp_path: Path) -> None:
    env = claude_env(claude_code_options({"env": {"MY_TOOL_SETTING": "on"}}), tmp_path, parent=PARENT)
    assert env["MY_TOOL_SETTING"] == "on"


def test_the_default_home_is_in_unifieds_data_folder(isolated_home: Path) -> None:
    assert default_home() == isolated_home / ".local" / "share" / "unified" / "claude-code" / "home"


def test_the_pin_is_exact() -> None:
    assert CLAUDE_CODE.package == "@anthropic-ai/claude-code"
    assert CLAUDE_CODE.version == "2.1.332"
    assert CLAUDE_CODE.supported == ((2, 1, 332), (2, 1, 333))
    assert CLAUDE_CODE.env_var == "UNIFIED_CLAUDE_BIN"
    assert CLAUDE_CODE.local_dir == ".claude-code"


def launch_of(tmp_path: Path, **fields: object) -> Launch:
    params = ExecuteParams(
        prompt="x", backend="claude-code", cwd=tmp_path, backend_options={"start_process": print}, **fields
    )
    return Launch.of(params, claude_code_options(params.backend_options))


def argv_of(tmp_path: Path, **fields: object) -> list[str]:
    return launch_of(tmp_path, **fields).argv(session_id="00000000-0000-4000-8000-000000000000", resume=False)


def test_the_flags_of_a_run(tmp_path: Path) -> None:
    launch = launch_of(
        tmp_path,
        model="claude-sonnet-5-5",
        excluded_tools=("run_shell_command", "WebFetch"),
        include_directories=(tmp_path,),
        system_instruction="Be brief.",
        max_turns=4,
        thinking=ThinkingConfig(level="minimal"),
        mcp_servers=(
            StdioMcpServer(name="echo", command="python3", args=("echo.py",)),
            HttpMcpServer(name="web", url="http://127.0.0.1:1/mcp", headers={"x": "y"}),
        ),
    )
    argv = launch.argv(session_id="00000000-0000-4000-8000-000000000000", resume=False)

    def value(flag: str) -> str:
        return argv[argv.index(flag) + 1]

    assert value("--output-format") == value("--input-format") == "stream-json"
    assert value("--permission-prompt-tool") == "stdio"
    assert value("--permission-mode") == "default"
    assert value("--setting-sources") == "user"
    assert "--strict-mcp-config" in argv
    ask = json.loads(value("--settings"))["permissions"]["ask"]
    assert {"Bash", "Write", "Edit", "Read", "mcp__echo", "mcp__web"} <= set(ask)
    assert "--session-id=00000000-0000-4000-8000-000000000000" in argv
    assert value("--model") == "claude-sonnet-5-5"
    assert value("--disallowedTools") == "Bash,Monitor,WebFetch"  # Monitor runs commands too (round 37)
    assert value("--add-dir") == str(tmp_path.resolve())
    assert value("--max-turns") == "4"
    assert value("--effort") == "low"
    held = launch.lease()  # the MCP servers come in a file of the home, written while a process holds it
    assert held is not None
    try:
        servers = json.loads(Path(value("--mcp-config")).read_text())["mcpServers"]
        assert Path(value("--system-prompt-file")).read_text() == "Be brief."
    finally:
        held.release()
    assert not Path(value("--mcp-config")).exists()
    assert not Path(value("--system-prompt-file")).exists()
    assert servers["echo"] == {"type": "stdio", "command": "python3", "args": ["echo.py"]}
    assert servers["web"] == {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"x": "y"}}


def test_a_thinking_budget_of_zero_turns_thinking_off(tmp_path: Path) -> None:
    params = ExecuteParams(
        prompt="x",
        backend="claude-code",
        cwd=tmp_path,
        thinking=ThinkingConfig(budget=0),
        backend_options={"start_process": print},
    )
    launch = Launch.of(params, claude_code_options(params.backend_options))
    assert launch.run_env()["CLAUDE_CODE_DISABLE_THINKING"] == "1"


@pytest.mark.parametrize("bad", [{"max_retries": 99}, {"policy": "allow everything"}, {"transcript": "x"}, {"nope": 1}])
def test_bad_options_are_a_configuration_error(bad: dict[str, object]) -> None:
    from unified.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        claude_code_options(bad)


def test_unified_installs_the_pinned_binary_by_its_backend_name() -> None:
    from unified._cli.install import spec_of

    assert spec_of("claude-code") is CLAUDE_CODE


def test_the_key_reaches_the_cli_through_an_api_key_helper_not_its_environment(tmp_path: Path) -> None:
    """docs/backends/claude-code.md, "Keys and the model's commands": the CLI's Bash commands inherit its
    environment, so the key is not in it; the CLI runs its `apiKeyHelper` (a 0600 file of the home) instead."""
    key = "sk-ant-api03-helper-key-0000000000000000"
    home = tmp_path / "home"
    params = ExecuteParams(
        prompt="x",
        backend="claude-code",
        cwd=tmp_path,
        backend_options={"start_process": print, "home": home, "env": {"ANTHROPIC_API_KEY": key}},
    )
    launch = Launch.of(params, claude_code_options(params.backend_options))
    assert "ANTHROPIC_API_KEY" not in launch.env
    assert "ANTHROPIC_API_KEY" not in launch.run_env()
    argv = launch.argv(session_id="00000000-0000-4000-8000-000000000000", resume=False)
    assert key not in " ".join(argv)
    helper = json.loads(argv[argv.index("--settings") + 1])["apiKeyHelper"]
    path = Path(shlex.split(helper)[1])
    assert Path(shlex.split(helper)[0]).name == "cat"  # by its absolute path: a PATH without it still works
    assert path.parent == home.resolve() / "keys"
    assert not path.exists(), "written when a process is about to start (its lease), not before"
    held = launch.lease()
    assert held is not None
    assert path.read_text() == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = Launch.of(params, claude_code_options(params.backend_options))
    assert again.api_key_helper == helper  # one file per key: the spare pool's key is stable
    other = again.lease()
    assert other is not None
    held.release()
    assert path.read_text() == key, "another process's hold keeps it"
    other.release()
    assert not path.exists(), "the last hold removes it"


def test_without_a_key_there_is_no_helper(tmp_path: Path) -> None:
    params = ExecuteParams(
        prompt="x", backend="claude-code", cwd=tmp_path, backend_options={"start_process": print, "home": tmp_path}
    )
    launch = Launch.of(params, claude_code_options(params.backend_options))
    assert launch.api_key_helper is None
    argv = launch.argv(session_id="00000000-0000-4000-8000-000000000000", resume=False)
    assert "apiKeyHelper" not in json.loads(argv[argv.index("--settings") + 1])
    assert not (tmp_path / "keys").exists()


def test_a_fifo_in_place_of_the_key_file_is_replaced_never_waited_on(tmp_path: Path) -> None:
    """The key file lies in a home the model's commands can write: a FIFO there would block a plain read
    (and the run with it) until someone writes to it."""
    key = "sk-ant-api03-" + "f" * 40
    first = key_helper({"ANTHROPIC_API_KEY": key}, tmp_path)
    assert first is not None
    path = Path(first.split(" ", 1)[1].strip("'"))
    path.parent.mkdir()
    os.mkfifo(path)
    held = lease([(key_file(tmp_path, key), key.encode())])
    assert path.is_file()
    assert path.read_text() == key
    held.release()


@pytest.mark.parametrize(
    ("env", "named", "why"),
    [
        ({"ANTHROPIC_BASE_URL": "not a url"}, "ANTHROPIC_BASE_URL of the env option", "it has no http:// or https://"),
        ({"ANTHROPIC_BASE_URL": "http://127.0.0.1:99999"}, "ANTHROPIC_BASE_URL of", "its port is not a number"),
        (
            {"CLAUDE_CODE_USE_VERTEX": "1", "ANTHROPIC_VERTEX_BASE_URL": "ftp://h"},
            "ANTHROPIC_VERTEX_BASE_URL of",
            "its scheme is 'ftp'",
        ),
    ],
)
def test_a_base_url_the_cli_cannot_send_to_is_refused_before_it_starts(
    tmp_path: Path, env: dict[str, str], named: str, why: str
) -> None:
    """The CLI took such a URL and failed each request as "API Error: Invalid URL", a `stream_interrupted` that
    said to check the network and retry."""
    from unified.errors import ConfigurationError

    params = ExecuteParams(
        prompt="x", backend="claude-code", cwd=tmp_path, backend_options={"start_process": print, "env": env}
    )
    with pytest.raises(ConfigurationError, match=f"the base URL in {named}") as raised:
        Launch.of(params, claude_code_options(params.backend_options))
    assert why in str(raised.value)


def test_a_base_url_from_the_environment_is_named_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from unified.errors import ConfigurationError

    monkeypatch.setenv("ANTHROPIC_BASE_URL", "gateway.example:8080")
    with pytest.raises(ConfigurationError, match="the base URL in ANTHROPIC_BASE_URL is not one") as raised:
        launch_of(tmp_path)
    assert raised.value.hint is not None
    assert "set ANTHROPIC_BASE_URL to an http:// or https:// URL" in raised.value.hint
    monkeypatch.setenv("CLAUDE_CODE_USE_BEDROCK", "1")  # Bedrock's requests go elsewhere: this one is not read
    assert launch_of(tmp_path).env["ANTHROPIC_BASE_URL"] == "gateway.example:8080"
