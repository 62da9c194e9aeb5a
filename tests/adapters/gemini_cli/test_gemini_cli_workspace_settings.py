"""Which workspace `.gemini/settings.json` a run refuses: one setting that runs a command, in a folder the CLI would
trust (its `checkPathTrust` read back: environment, folder trust off, `trustedFolders.json`). e2e:
tests/e2e/gemini_cli/test_gemini_cli_workspace_settings.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from unified._adapters.gemini_cli._workspace_settings import env_file_refusal, strip_comments, workspace_refusal


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    (path / ".gemini").mkdir(parents=True)
    return path


def _refusal(
    ws: Path, home: Path, env: dict[str, str] | None = None, trust: dict[str, str] | None = None
) -> str | None:
    if trust is not None:
        (home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trust))
    return workspace_refusal(ws.resolve(), env or {}, home, home / "no-system-settings.json")


def _workspace(tmp_path: Path, text: str) -> Path:
    ws = tmp_path / "repo" / "ws"
    (ws / ".gemini").mkdir(parents=True)
    (ws / ".gemini" / "settings.json").write_text(text)
    return ws


def _trust_off(home: Path) -> None:
    (home / ".gemini" / "settings.json").write_text('{"security": {"folderTrust": {"enabled": false}}}')


def test_what_runs_commands_is_named_and_comments_do_not_hide_it(tmp_path: Path, home: Path) -> None:
    _trust_off(home)
    ws = _workspace(
        tmp_path,
        '{\n  // the CLI strips comments\n  "hooks": {"SessionStart": []}, /* a "quoted" */ "x": "a // b",\n'
        '  "tools": {"callCommand": "run", "allowed": ["run_shell_command"]}, "mcpServers": {}\n}',
    )
    assert _refusal(ws, home) == f"{ws / '.gemini' / 'settings.json'} sets hooks, tools.callCommand"
    assert json.loads(strip_comments('{"a": "// not a comment", /* x */ "b": "\\"/*"}')) == {
        "a": "// not a comment",
        "b": '"/*',
    }


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"mcp": {"serverCommand": "sh -c x"}}, "mcp.serverCommand"),
        ({"tools": {"sandbox": {"image": "repo/image"}}}, "tools.sandbox"),
        (
            {"experimental": {"gemmaModelRouter": {"enabled": True, "binaryPath": "./x"}}},
            "experimental.gemmaModelRouter.enabled",
        ),
        ({"telemetry": {"otlpEndpoint": "http://x:4317"}}, "telemetry.otlpEndpoint"),
        ({"context": {"includeDirectories": ["/"]}}, "context.includeDirectories"),
    ],
)
def test_each_unsafe_setting_is_named(tmp_path: Path, home: Path, settings: dict[str, object], named: str) -> None:
    _trust_off(home)
    ws = _workspace(tmp_path, json.dumps(settings))
    assert _refusal(ws, home) == f"{ws / '.gemini' / 'settings.json'} sets {named}"


def test_harmless_settings_a_home_folder_and_no_file_are_not_refused(tmp_path: Path, home: Path) -> None:
    _trust_off(home)
    harmless = (
        '{"model": {"name": "x"}, "tools": {"allowed": ["ls"], "sandbox": false}, "telemetry": {"enabled": false}}'
    )
    assert _refusal(_workspace(tmp_path, harmless), home) is None
    assert _refusal(tmp_path, home) is None
    (home / ".gemini" / "settings.json").write_text('{"mcpServers": {"mine": {"command": "x"}}}')
    assert _refusal(home, home) is None  # the user's own settings, not a workspace's


def test_too_large_to_read_is_refused(tmp_path: Path, home: Path) -> None:
    _trust_off(home)
    ws = _workspace(tmp_path, '{"hooks": {}, "pad": "' + "x" * (1 << 20) + '"}')
    assert _refusal(ws, home) == f"{ws / '.gemini' / 'settings.json'} is over 1 MiB, too large to read"


@pytest.mark.parametrize(
    ("env", "trust", "refused"),
    [
        ({}, None, False),  # folder trust on (the CLI's default), no trust file: untrusted
        ({}, {"{repo}": "TRUST_FOLDER"}, True),
        ({}, {"{ws}/child": "TRUST_PARENT"}, True),  # trusts its parent, the workspace
        ({}, {"{repo}": "TRUST_FOLDER", "{ws}": "DO_NOT_TRUST"}, False),  # the longest rule decides
        ({}, {"{ws}/child": "TRUST_FOLDER"}, False),
        ({"GEMINI_CLI_TRUST_WORKSPACE": "true"}, None, True),
        ({"GEMINI_CLI_TRUST_WORKSPACE": "false"}, {"{ws}": "TRUST_FOLDER"}, False),
        ({"GEMINI_RESTRICTED_MODE": "true"}, {"{ws}": "TRUST_FOLDER"}, False),
    ],
)
def test_only_a_folder_the_cli_trusts_is_refused(
    tmp_path: Path, home: Path, env: dict[str, str], trust: dict[str, str] | None, refused: bool
) -> None:
    ws = _workspace(tmp_path, '{"mcpServers": {"repo": {"command": "sh"}}}')
    rules = None if trust is None else {k.format(repo=ws.parent, ws=ws): v for k, v in trust.items()}
    assert (_refusal(ws, home, env, rules) is not None) is refused


def test_an_unreadable_trust_file_counts_as_trusting(tmp_path: Path, home: Path) -> None:
    """The CLI will not start over it; unified says what it would have refused first."""
    ws = _workspace(tmp_path, '{"mcpServers": {"repo": {"command": "sh"}}}')
    (home / ".gemini" / "trustedFolders.json").write_text("{not json")
    assert _refusal(ws, home) is not None


def test_an_env_file_that_moves_the_endpoint_is_refused_where_the_cli_would_load_it(tmp_path: Path, home: Path) -> None:
    """The one file 0.61 loads (the first `.gemini/.env` or `.env` up from the cwd, never the user's own at home), a
    variable the run does not set, in a folder the CLI trusts (e2e: a FakeGemini named there got the run's key)."""
    _trust_off(home)
    ws = tmp_path / "repo" / "ws"
    ws.mkdir(parents=True)
    (tmp_path / "repo" / ".env").write_text("# app settings\nexport HTTPS_PROXY=http://p:1\nPORT=1\n")

    def refusal(env: dict[str, str] | None = None) -> str | None:
        return env_file_refusal(ws.resolve(), env or {}, home, home / "no-system-settings.json")

    assert refusal() == f"{tmp_path / 'repo' / '.env'} sets HTTPS_PROXY"
    assert refusal({"HTTPS_PROXY": "http://mine:1"}) is None  # set for the run: the CLI keeps it
    (ws / ".env").write_text("PORT=2\n")  # the nearer file is the one loaded, the other never read
    assert refusal() is None
    (ws / ".gemini").mkdir()
    (ws / ".gemini" / ".env").write_text("GOOGLE_GEMINI_BASE_URL=http://x\nCODE_ASSIST_ENDPOINT: http://y\n")
    assert refusal() == f"{ws / '.gemini' / '.env'} sets CODE_ASSIST_ENDPOINT, GOOGLE_GEMINI_BASE_URL"
    assert refusal({"GEMINI_CLI_TRUST_WORKSPACE": "false"}) is None  # untrusted: only API keys and the project
    (home / ".env").write_text("GOOGLE_GEMINI_BASE_URL=http://mine\n")
    assert env_file_refusal(home.resolve(), {}, home, home / "none") is None  # the user's own
