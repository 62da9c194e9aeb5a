"""Point a real backend at a `FakeGemini`: the options each adapter needs, and an isolated CLI home.

The same scripted server can stand behind all three backends: the API backends through their
`base_url`, the real `gemini` binary through `GOOGLE_GEMINI_BASE_URL` with an API key and the
settings that make it run offline and deterministically (docs/testing.md, "Integration tests").
The CLI's home is always a directory the caller gives, never the user's `~/.gemini`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from unified._exports import publish
from unified.testing._fake_anthropic import FakeAnthropic
from unified.testing._fake_gemini import FakeGemini
from unified.testing._fake_openai import FAKE_OPENAI_KEY, FakeOpenAI

__all__ = ["OFFLINE_CLI_SETTINGS", "backend_options_for", "prepare_cli_home"]

OFFLINE_CLI_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "general": {"sessionRetention": {"enabled": False}, "enableAutoUpdate": False},
    "telemetry": {"enabled": False},
    "privacy": {"usageStatisticsEnabled": False},
    "ide": {"enabled": False},
}
"""`selectedType` makes the CLI send API-key requests to GOOGLE_GEMINI_BASE_URL (without it, the
environment check picks the `gateway` auth type); the rest keeps the run offline and repeatable,
and `sessionRetention` off avoids the CLI's session-cleanup data-loss bug."""


def prepare_cli_home(home: Path) -> Path:
    """Write the offline settings into `<home>/.gemini/settings.json`; returns `home`."""
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(OFFLINE_CLI_SETTINGS, indent=2))
    return home


def backend_options_for(
    server: FakeGemini | FakeAnthropic | FakeOpenAI, backend: str, *, cli_home: Path | None = None
) -> dict[str, object]:
    """`ExecuteParams.backend_options` that send `backend`'s model calls to `server`.

    For `gemini-cli`, `cli_home` (prepared with the offline settings) becomes the child's HOME and
    GEMINI_CLI_HOME; without it the child inherits the caller's, which a test must already isolate.
    For `claude-code` (a `FakeAnthropic`), `cli_home` is the CLI's isolated home (default: the one in
    unified's data folder, which a test isolates with XDG_DATA_HOME); the CLI retries a failed
    request once, quickly.
    For `codex` (a `FakeOpenAI`), the server's base URL and key become the run's custom provider; the
    Codex home is the backend's own (under UNIFIED_DATA_DIR / the user data dir, which a test isolates),
    or `cli_home` when given. Run it with model `unified.testing.CODEX_MODEL`.
    """
    if isinstance(server, FakeAnthropic):
        if backend != "claude-code":
            raise ValueError(f"FakeAnthropic cannot stand behind the {backend!r} backend")
        options: dict[str, object] = {"env": dict(server.cli_env), "max_retries": 1}
        if cli_home is not None:
            options["home"] = cli_home
        return options
    if isinstance(server, FakeOpenAI):
        if backend != "codex":
            raise ValueError(f"FakeOpenAI stands behind the codex backend, not {backend!r}")
        options = {"base_url": server.base_url, "api_key": FAKE_OPENAI_KEY}
        if cli_home is not None:
            options["codex_home"] = cli_home
        return options
    if backend == "gemini-cli":
        env = dict(server.cli_env)
        if cli_home is not None:
            prepare_cli_home(cli_home)
            env |= {"HOME": str(cli_home), "GEMINI_CLI_HOME": str(cli_home)}
        return {"env": env, "pool_size": 0}
    if backend in ("generate-content", "interactions"):
        return {"api_key": "fake-gemini-key", "base_url": server.base_url}
    raise ValueError(f"FakeGemini cannot stand behind the {backend!r} backend")


publish("unified.testing", ["backend_options_for", "prepare_cli_home"], globals())
