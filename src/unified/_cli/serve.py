"""`unified serve`: a fake model server from the shell, so every backend can be tried with `unified run`.

A fake server stands in for a provider's API on 127.0.0.1 and plays a scripted task or a
recording. `serve` starts one and prints the `export NAME=VALUE` lines that point the backends
it stands behind at it (and an `unset` line for the variables that would send them elsewhere);
a user runs those in another shell and then `unified run "..." --backend NAME`, with no code
and no credentials. The script starts over whenever it runs out, so runs can follow one another.

`FAKE_SERVERS` is the table of fakes, by name: a new provider's fake (its server, what it
exports) is one more entry, whose `start` is imported only when that fake is served.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from unified._files import not_a_file
from unified._text import first_problem

__all__ = [
    "FAKE_SERVERS",
    "FakeServer",
    "ServeError",
    "ServedFake",
    "export_lines",
    "serve_anthropic",
    "serve_gemini",
    "serve_openai",
    "start_fake",
]


class ServeError(Exception):
    """The fake cannot serve what was asked (a script it cannot read, a port in use): bad input."""


class ServedFake(Protocol):
    """A fake server running for `unified serve`."""

    @property
    def plays(self) -> str:
        """What it answers with, for a person: "the demo task (3 turns)", "FILE (12 turns)"."""
        ...

    def exports(self) -> dict[str, str]:
        """The variables that point its backends at it (and keep what they write in `home`)."""
        ...

    def served(self) -> list[str]:
        """One line per request answered so far, oldest first."""
        ...

    def close(self) -> None: ...


_Script = TypeVar("_Script")
Start = Callable[[Path | None, int, Path], ServedFake]
"""(script or recording, or None for the built-in task; port, 0 for any; a scratch folder) → the running fake."""


@dataclass(frozen=True, slots=True)
class FakeServer:
    """One fake in the table: what it stands in for and how to start it."""

    title: str
    backends: tuple[str, ...]
    """The backends the exports point at it (each can then run with `unified run --backend NAME`)."""
    start: str
    """"module:function", a `Start`."""
    scripts: str
    """Which files it plays, for `--help` and errors."""
    unset: tuple[str, ...] = ()
    """Variables of a user's shell that would send these backends elsewhere (a Vertex AI project, ...)."""


FAKE_SERVERS: dict[str, FakeServer] = {
    "gemini": FakeServer(
        title="FakeGemini: the Gemini API (generateContent, streams, Interactions) on 127.0.0.1",
        backends=("gemini-cli", "generate-content", "interactions"),
        start="unified._cli.serve:serve_gemini",
        scripts="a FakeGemini script (.json, .yaml) or a Gemini CLI recording (.responses, .jsonl)",
        unset=(
            "GOOGLE_API_KEY",
            "GOOGLE_GENAI_USE_VERTEXAI",
            "GOOGLE_GENAI_USE_GCA",
            "GOOGLE_CLOUD_PROJECT",
            "GOOGLE_CLOUD_LOCATION",
            "GOOGLE_VERTEX_BASE_URL",
            "CODE_ASSIST_ENDPOINT",
        ),
    ),
    "anthropic": FakeServer(
        title="FakeAnthropic: the Anthropic Messages API on 127.0.0.1",
        backends=("claude-code",),
        start="unified._cli.serve:serve_anthropic",
        scripts="a FakeGemini-style script (.json, .yaml): the same turns, as Claude's messages",
        unset=("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"),
    ),
    "openai": FakeServer(
        title="FakeOpenAI: the OpenAI Responses API on 127.0.0.1",
        backends=("codex",),
        start="unified._cli.serve:serve_openai",
        scripts="a FakeGemini-style script (.json, .yaml): the same turns, as Responses API events",
        unset=("CODEX_HOME",),
    ),
}
"""Fake name → its entry (`unified serve --fake NAME`)."""


def start_fake(name: str, script: Path | None, port: int, home: Path) -> ServedFake:
    module, _, attribute = FAKE_SERVERS[name].start.partition(":")
    start: Start = getattr(importlib.import_module(module), attribute)
    return start(script, port, home)


class _Served:
    """A fake of the test kit serving a script (or the demo's task) until closed, starting over when it runs out."""

    def __init__(self, fake: Callable[..., Any], demo_backend: str, script: Path | None, port: int, home: Path) -> None:
        from unified._cli.demo import script as demo_script
        from unified.testing._scenario import Script

        if script is None:
            turns = Script(turns=list(demo_script(demo_backend)))
            self.plays = f"the demo task: look around, read notes.txt, answer ({len(turns.turns)} turns)"
        else:
            turns = _load(script, Script.from_file)
            self.plays = f"{script} ({len(turns.turns)} turn{'s' * (len(turns.turns) != 1)})"
        self.home = home
        try:
            self.server = fake(turns, port=port, repeat=True).start()
        except OSError as exc:
            raise ServeError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror or exc})") from exc

    def served(self) -> list[str]:
        return [
            f"{r.method} {r.path} → {r.status}{': ' + r.error if r.error else ''}"
            for r in self.server.requests
            if r.api_method not in ("countTokens", "count_tokens")
        ]

    def close(self) -> None:
        self.server.stop()


class _ServedGemini(_Served):
    def exports(self) -> dict[str, str]:
        from unified._adapters.gemini_cli._launch import DEFAULT_MODEL

        return {
            "GOOGLE_GEMINI_BASE_URL": self.server.base_url,
            "GEMINI_API_KEY": "fake-gemini-key",
            "GEMINI_MODEL": DEFAULT_MODEL,  # the CLI's model router would spend scripted turns first
            "GEMINI_CLI_HOME": str(self.home / "gemini-cli-home"),  # the CLI's sessions, not in ~/.gemini
            "UNIFIED_DATA_DIR": str(self.home / "unified-data"),  # the API backends' sessions
        }


class _ServedAnthropic(_Served):
    def exports(self) -> dict[str, str]:
        # ANTHROPIC_BASE_URL, a fake key, a fixed model. The CLI runs in the claude-code backend's own
        # home (in unified's data folder), never in ~/.claude.
        return dict(self.server.cli_env)


class _ServedOpenAI(_Served):
    def exports(self) -> dict[str, str]:
        return {
            **self.server.env,  # OPENAI_BASE_URL and OPENAI_API_KEY, as a user sets them
            "UNIFIED_DATA_DIR": str(self.home / "unified-data"),  # the codex backend's CODEX_HOME is in it
        }


def serve_gemini(script: Path | None, port: int, home: Path) -> ServedFake:
    from unified.testing import FakeGemini

    return _ServedGemini(FakeGemini, "gemini-cli", script, port, home)


def serve_anthropic(script: Path | None, port: int, home: Path) -> ServedFake:
    from unified.testing import FakeAnthropic

    return _ServedAnthropic(FakeAnthropic, "claude-code", script, port, home)


def serve_openai(script: Path | None, port: int, home: Path) -> ServedFake:
    from unified.testing import FakeOpenAI

    return _ServedOpenAI(FakeOpenAI, "codex", script, port, home)


def _load(path: Path, loader: Callable[[Path], _Script]) -> _Script:
    """A script file, or a `ServeError` saying in one line why it is not one."""
    if not path.is_file():
        raise ServeError(f"{path}: {not_a_file(path)}")
    from unified.testing._yaml import MalformedYaml

    try:
        return loader(path)
    except MalformedYaml as exc:
        raise ServeError(f"{exc.at(path)}; fix the script, or play another") from exc
    except (ValueError, KeyError, TypeError, OSError) as exc:  # pydantic's ValidationError is a ValueError
        raise ServeError(f"{path}: not a script this fake can play ({first_problem(exc)})") from exc


def export_lines(fake: FakeServer, served: ServedFake) -> list[str]:
    """What a user runs in their shell: `unset` the variables that would win, then `export` each one."""
    from shlex import quote

    lines = [f"unset {' '.join(fake.unset)}"] if fake.unset else []
    return lines + [f"export {name}={quote(value)}" for name, value in served.exports().items()]
