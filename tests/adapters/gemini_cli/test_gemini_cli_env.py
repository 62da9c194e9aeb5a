"""The child's environment: one node process with the heap limit the CLI's relaunch would have asked for."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import unified._adapters.gemini_cli._launch as launch_module
from unified._adapters.gemini_cli._launch import (
    ENV_FD_VAR,
    KEY_LOADER,
    SYSTEM_SETTINGS_ENV,
    credentials_by_pipe,
    gemini_env,
)
from unified.errors import BackendUnavailable


def _half_memory_mb() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (2 * 1024 * 1024)


def test_the_cli_runs_in_one_node_process_with_half_the_memory_as_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_CLI_NO_RELAUNCH", raising=False)
    monkeypatch.setenv("NODE_OPTIONS", "--enable-source-maps")
    env = gemini_env({"EXTRA": "1"})
    assert env["GEMINI_CLI_NO_RELAUNCH"] == "true"
    assert env["NODE_OPTIONS"] == f"--enable-source-maps --max-old-space-size={_half_memory_mb()}"
    assert env["EXTRA"] == "1"
    assert env[SYSTEM_SETTINGS_ENV]


def test_a_caller_who_chose_keeps_their_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_CLI_NO_RELAUNCH", raising=False)
    monkeypatch.setenv("NODE_OPTIONS", "--max-old-space-size=512")
    assert gemini_env()["NODE_OPTIONS"] == "--max-old-space-size=512"
    monkeypatch.delenv("NODE_OPTIONS")
    env = gemini_env({"GEMINI_CLI_NO_RELAUNCH": ""})
    assert env["GEMINI_CLI_NO_RELAUNCH"] == ""
    assert "NODE_OPTIONS" not in env


def test_node_keeps_its_compiled_code_in_unifieds_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Node 22.1+ reads NODE_COMPILE_CACHE (older Node ignores it): later cold starts skip compiling."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("NODE_COMPILE_CACHE", raising=False)
    monkeypatch.delenv("NODE_DISABLE_COMPILE_CACHE", raising=False)
    folder = Path(gemini_env()["NODE_COMPILE_CACHE"])
    assert folder.name == "node-compile-cache"
    assert folder.is_relative_to(tmp_path / "cache")


@pytest.mark.parametrize(
    ("environ", "extra", "expected"),
    [
        ({"NODE_COMPILE_CACHE": "/elsewhere"}, {}, "/elsewhere"),  # the caller's environment
        ({}, {"NODE_COMPILE_CACHE": "/mine"}, "/mine"),  # the backend's env option
        ({"NODE_DISABLE_COMPILE_CACHE": "1"}, {}, None),  # turned off: none of ours
        ({}, {"NODE_DISABLE_COMPILE_CACHE": "1"}, None),
    ],
)
def test_a_callers_compile_cache_choice_wins(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], extra: dict[str, str], expected: str | None
) -> None:
    for name in ("NODE_COMPILE_CACHE", "NODE_DISABLE_COMPILE_CACHE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert gemini_env(extra).get("NODE_COMPILE_CACHE") == expected


def test_the_system_settings_turn_on_the_clis_redaction_of_keys_in_commands(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs/backends/gemini-cli.md, "Keys and the model's commands": the machine's lists are kept, the
    credentials blocked and never allowed."""
    machine = tmp_path / "system.json"
    machine.write_text(
        json.dumps(
            {
                "security": {
                    "environmentVariableRedaction": {
                        "enabled": False,
                        "blocked": ["MY_DB_URL"],
                        "allowed": ["gemini_api_key", "MY_TOOL_HOME"],
                    }
                }
            }
        )
    )
    monkeypatch.setenv(SYSTEM_SETTINGS_ENV, str(machine))
    settings = json.loads(Path(gemini_env()[SYSTEM_SETTINGS_ENV]).read_text())
    redaction = settings["security"]["environmentVariableRedaction"]
    assert redaction == {
        "enabled": True,
        "blocked": ["MY_DB_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"],
        "allowed": ["MY_TOOL_HOME"],
    }
    monkeypatch.setenv(SYSTEM_SETTINGS_ENV, str(tmp_path / "none.json"))
    settings = json.loads(Path(gemini_env()[SYSTEM_SETTINGS_ENV]).read_text())
    assert settings["security"]["environmentVariableRedaction"] == {
        "enabled": True,
        "blocked": ["GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"],
    }


def test_the_credentials_go_by_pipe_and_node_options_load_the_key_loader_first() -> None:
    """docs/backends/gemini-cli.md, "Keys and the model's commands": the key leaves the exec environment (which
    `/proc/<pid>/environ` shows for the process's life); the pipe also carries the caller's `NODE_OPTIONS`,
    which the loader puts back, so what the CLI starts loads nothing of ours."""
    env = {
        "PATH": "/bin",
        "GEMINI_API_KEY": "AIza-key",
        "GOOGLE_API_KEY": "google-key",
        "NODE_OPTIONS": "--max-old-space-size=512",
        ENV_FD_VAR: "7",  # a stale one from the caller's environment is never passed on
    }
    launch_env, piped = credentials_by_pipe(env)
    assert piped is not None
    assert piped.fd_var == ENV_FD_VAR
    assert dict(piped.values) == {
        "GEMINI_API_KEY": "AIza-key",
        "GOOGLE_API_KEY": "google-key",
        "NODE_OPTIONS": "--max-old-space-size=512",
    }
    assert launch_env == {"PATH": "/bin", "NODE_OPTIONS": f'--require "{KEY_LOADER}" --max-old-space-size=512'}
    _, piped = credentials_by_pipe({"GEMINI_API_KEY": "AIza-key"})
    assert piped is not None
    assert piped.values["NODE_OPTIONS"] is None  # none before: none for what the CLI starts


def test_without_credentials_or_a_pipe_the_environment_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """No credentials: nothing to hide, no preload. Where no descriptor can be passed (Windows), the key stays
    in the environment, as before."""
    env = {"PATH": "/bin", "NODE_OPTIONS": "--max-old-space-size=512"}
    assert credentials_by_pipe(env) == (env, None)
    monkeypatch.setattr(launch_module, "PIPES_CREDENTIALS", False)
    keyed = {**env, "GEMINI_API_KEY": "AIza-key"}
    assert credentials_by_pipe(keyed) == (keyed, None)


def test_a_missing_key_loader_is_a_typed_error_not_a_cli_without_its_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(launch_module, "KEY_LOADER", tmp_path / "key_loader.cjs")
    with pytest.raises(BackendUnavailable, match="key loader") as raised:
        credentials_by_pipe({"GEMINI_API_KEY": "AIza-key"})
    assert "reinstall unified" in (raised.value.hint or "")


def test_node_options_quote_the_loaders_path() -> None:
    """node splits `NODE_OPTIONS` at spaces outside double quotes, a backslash escaping inside them."""
    assert launch_module._node_option_quoted('/a b/c"d\\e.cjs') == '"/a b/c\\"d\\\\e.cjs"'


@pytest.mark.parametrize(
    ("url", "why"),
    [("not a url", "it has no http:// or https://"), ("http://127.0.0.1:99999", "its port is not a number")],
)
@pytest.mark.parametrize("given_by", ["option", "environment"])
def test_a_base_url_the_cli_cannot_send_to_is_refused_before_it_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str, why: str, given_by: str
) -> None:
    """The CLI took such a URL, started, and failed session/new ("Invalid custom base URL"): a backend_error."""
    from unified._adapters.gemini_cli._launch import Launch
    from unified._adapters.gemini_cli._options import gemini_cli_options
    from unified.errors import ConfigurationError
    from unified.types import ExecuteParams

    env = {"GEMINI_API_KEY": "k" * 12}
    if given_by == "option":
        env["GOOGLE_GEMINI_BASE_URL"] = url
    else:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", url)
    options = gemini_cli_options({"start_process": print, "env": env})
    named = "GOOGLE_GEMINI_BASE_URL of the env option" if given_by == "option" else "GOOGLE_GEMINI_BASE_URL is"
    with pytest.raises(ConfigurationError, match=f"the base URL in {named}") as raised:
        Launch.of(ExecuteParams(prompt="x", backend="gemini-cli", cwd=tmp_path), options)
    assert why in str(raised.value)
    assert "set GOOGLE_GEMINI_BASE_URL to an http:// or https:// URL" in (raised.value.hint or "")
