"""Which workspace `.gemini/settings.json` a run refuses: one setting that runs a command, in a folder the CLI would
trust (its `checkPathTrust` read back: environment, folder trust off, `trustedFolders.json`). e2e:
tests/e2e/gemini_cli/test_gemini_cli_workspace_settings.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from unified._adapters.gemini_cli._workspace_settings import (
    FolderTrust,
    env_file_refusal,
    strip_comments,
    workspace_refusal,
)


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
    return workspace_refusal(FolderTrust(ws.resolve(), env or {}, home, home / "no-system-settings.json"))


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
        found = env_file_refusal(FolderTrust(ws.resolve(), env or {"GEMINI_API_KEY": "k"}, home, home / "none.json"))
        return None if found is None else found[0].partition(":")[0]

    assert refusal() == f"{tmp_path / 'repo' / '.env'} sets HTTPS_PROXY"
    assert refusal({"HTTPS_PROXY": "http://mine:1"}) is None  # set for the run: the CLI keeps it
    (ws / ".env").write_text("PORT=2\n")  # the nearer file is the one loaded, the other never read
    assert refusal() is None
    (ws / ".gemini").mkdir()
    (ws / ".gemini" / ".env").write_text("GOOGLE_GEMINI_BASE_URL=http://x\nCODE_ASSIST_ENDPOINT: http://y\n")
    assert refusal() == f"{ws / '.gemini' / '.env'} sets CODE_ASSIST_ENDPOINT, GOOGLE_GEMINI_BASE_URL"
    assert refusal({"GEMINI_API_KEY": "k", "GEMINI_CLI_TRUST_WORKSPACE": "false"}) is None  # untrusted: API keys only
    (home / ".env").write_text("GOOGLE_GEMINI_BASE_URL=http://mine\n")
    assert env_file_refusal(FolderTrust(home.resolve(), {}, home, home / "none")) is None  # the user's own


@pytest.mark.parametrize("trusted", [True, False])
def test_an_env_file_that_gives_a_keyless_run_its_key_is_refused(tmp_path: Path, home: Path, trusted: bool) -> None:
    """A run that gives no credentials took the workspace `.env`'s `GEMINI_API_KEY` (0.61 loads API keys from it in a
    folder it does not trust too): the run went to the repository's account (e2e: FakeGemini got that key)."""
    if trusted:
        _trust_off(home)
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / ".env").write_text("GEMINI_API_KEY=theirs\nGOOGLE_CLOUD_PROJECT=p\nPORT=1\n")

    def refusal(**env: str) -> tuple[str, str] | None:
        return env_file_refusal(FolderTrust(ws.resolve(), env, home, home / "none.json"))

    found = refusal()
    assert found is not None
    assert found[0].startswith(f"{ws / '.env'} sets GEMINI_API_KEY: the run gives the gemini CLI no credentials")
    assert "GEMINI_API_KEY in the environment or the env option" in found[1]
    assert refusal(GEMINI_API_KEY="mine") is None  # the run's own key: the CLI never replaces it
    assert refusal(GOOGLE_APPLICATION_CREDENTIALS="/adc.json") is None
    (ws / ".env").write_text("GOOGLE_APPLICATION_CREDENTIALS=/theirs.json\n")
    assert (refusal() is not None) is trusted  # a folder the CLI does not trust: only the API keys are taken
    (ws / ".env").write_text("GOOGLE_CLOUD_PROJECT=p\nGOOGLE_CLOUD_LOCATION=l\n")  # a project the run's key must reach
    assert refusal() is None


def test_a_start_looks_up_the_folder_trust_once(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A start with a workspace settings file, a `.env` and a stdio MCP server asked `cli_trusts` (which reads the
    system and user settings and the trust file) three times: once is enough, and its answer is the same."""
    from unified._adapters.gemini_cli import _workspace_settings
    from unified._adapters.gemini_cli._launch import Launch
    from unified._adapters.gemini_cli._options import gemini_cli_options
    from unified.types import ExecuteParams, StdioMcpServer

    _trust_off(home)
    ws = _workspace(tmp_path, '{"ui": {"theme": "x"}}')
    (ws / ".env").write_text("PORT=1\n")
    looks: list[Path] = []
    real = _workspace_settings.cli_trusts

    def counted(cwd: Path, *rest: object) -> bool:
        looks.append(cwd)
        return real(cwd, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_workspace_settings, "cli_trusts", counted)
    options = gemini_cli_options({"start_process": print, "env": {"HOME": str(home), "GEMINI_CLI_HOME": str(home)}})
    server = StdioMcpServer(name="s", command="true")
    launch = Launch.of(ExecuteParams(prompt="x", backend="gemini-cli", cwd=ws, mcp_servers=[server]), options)
    assert looks == [ws.resolve()]
    assert launch.folder_trusted
