"""`backend="auto"`: pick the backend that can authenticate here and offers what the run needs.

A backend qualifies when one of its auth modes is present and usable and every required
capability is at least `emulated` in the capability matrix. Among those, the one with the fewest
`partial` levels (limits the note spells out) for the required capabilities wins; ties go to the
fixed preference order below. `emulated` counts as fully supported: unified builds it, the
backend's own limits do not apply. When
nothing qualifies, the `RoutingError` says which capability or credential is missing and what to
do, because "no backend" alone would leave the caller guessing.

Imports only the light parts of `unified`: routing runs before any backend SDK is loaded.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from unified import capabilities
from unified._auth import (
    AUTH_MODE_TITLES,
    AuthMode,
    AuthReport,
    api_modes,
    claude_code_home,
    claude_code_modes,
    detect_auth,
    detect_cli_auth,
    openai_modes,
    resolve_api_auth,
)
from unified._text import choose_one_of
from unified.errors import ConfigurationError, RoutingError, UnifiedError
from unified.types import BackendOptions, ExecuteParams

__all__ = [
    "PREFERENCE",
    "REST_S",
    "BackendSelection",
    "note_gave_out",
    "options_auth",
    "requirements_of",
    "select_backend",
    "select_backend_for",
]

PREFERENCE: tuple[str, ...] = ("generate-content", "gemini-cli", "interactions", "claude-code", "codex")
"""Tie-break order: unified's own loop on the stable API first (no subprocess, every tool local),
then the real Gemini CLI (the only one for a Code Assist login), then the beta Interactions API,
then Claude Code (the only one for Anthropic's credentials) and Codex (the only one for OpenAI's):
each wins whenever only its provider's credentials are here."""


_AUTH_HINTS = {
    "api_key": "set GEMINI_API_KEY (or GOOGLE_API_KEY)",
    "vertex": "set GOOGLE_GENAI_USE_VERTEXAI=true, GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION "
    "and run `gcloud auth application-default login` (or GOOGLE_GENAI_USE_VERTEXAI=true and GOOGLE_API_KEY "
    "alone: express mode)",
    "code_assist": "run `gemini` once and log in with Google",
    "gateway": "set GOOGLE_GEMINI_BASE_URL to your gateway and GEMINI_API_KEY to the key it expects",
    "anthropic_api_key": "set ANTHROPIC_API_KEY",
    "anthropic_gateway": "set ANTHROPIC_BASE_URL to your gateway and ANTHROPIC_API_KEY to the key it expects",
    "bedrock": "set CLAUDE_CODE_USE_BEDROCK=1 and AWS_REGION with AWS credentials",
    "claude_vertex": "set CLAUDE_CODE_USE_VERTEX=1, CLOUD_ML_REGION and ANTHROPIC_VERTEX_PROJECT_ID with Google "
    "credentials",
    "claude_login": "log in to Claude in the claude-code backend's home (`unified doctor` names it)",
    "openai_api_key": "set OPENAI_API_KEY",
    "openai_base_url": "set OPENAI_BASE_URL to an OpenAI Responses API server and OPENAI_API_KEY to its key",
    "chatgpt_login": "run `codex login` (a ChatGPT login in ~/.codex/auth.json)",
}


@dataclass(frozen=True, slots=True)
class BackendSelection:
    """The chosen backend, why, and the other backends that would also have worked (best first)."""

    backend: str
    reason: str
    alternatives: tuple[str, ...] = ()


_GAVE_OUT: dict[str, tuple[float, str]] = {}
"""Backend -> (monotonic time until which `auto` passes it over, why): a backend a run just failed
over from (rate limited, refused credentials, unavailable) is not chosen again while it rests."""
REST_S = 60.0
"""How long `auto` passes over a backend that gave out, unless its error said when to come back."""


def note_gave_out(backend: str, failure: UnifiedError) -> None:
    """Remember that `backend` just gave out with `failure` (in this process), for `auto` to skip it."""
    wait = failure.details.get("retry_after_s")
    rest = float(wait) if isinstance(wait, int | float) and wait > 0 else REST_S
    _GAVE_OUT[backend] = (time.monotonic() + rest, f"{failure.code} {rest:.0f} s ago at most")


def _resting() -> dict[str, str]:
    now = time.monotonic()
    for name in [n for n, (until, _) in _GAVE_OUT.items() if until <= now]:
        del _GAVE_OUT[name]
    return {name: why for name, (_, why) in _GAVE_OUT.items()}


def _auto_backends() -> list[str]:
    resting = _resting()
    eligible = [b.name for b in capabilities.MATRIX.backends.values() if b.auto and b.name not in resting]
    return sorted(eligible, key=lambda name: PREFERENCE.index(name) if name in PREFERENCE else len(PREFERENCE))


def _missing(backend: str, requires: list[str]) -> list[str]:
    return [c for c in requires if capabilities.level(backend, c) not in capabilities.QUALIFYING_LEVELS]


def select_backend(
    auth: AuthReport,
    requires: Iterable[str] = (),
    prefer: str | None = None,
    only: str | None = None,
    unfit: Mapping[str, str] | None = None,
) -> BackendSelection:
    """The best backend for the credentials in `auth` that offers every capability in `requires`.

    `prefer` wins whenever it qualifies; otherwise the reason says why it was passed over.
    `only` considers that one backend alone (a resumed session's owner: no other can continue it).
    `unfit` names backends the run's `backend_options` are not for, and why (`options_auth`).
    Raises `RoutingError` naming the missing capability or credential when nothing qualifies.
    """
    unfit = unfit or {}
    required = sorted(set(requires))
    unknown = [c for c in required if c not in capabilities.CAPABILITIES]
    if unknown:
        raise RoutingError(
            f"unknown capability {', '.join(map(repr, unknown))}",
            hint=f"capabilities are: {', '.join(capabilities.CAPABILITIES)}",
        )
    candidates = [only] if only is not None else _auto_backends()
    if only is not None and only not in capabilities.BACKENDS:
        raise ConfigurationError(f"unknown backend {only!r}", hint=choose_one_of(only, capabilities.BACKENDS))
    if prefer is not None and prefer not in candidates:
        if prefer not in capabilities.BACKENDS:
            raise ConfigurationError(f"unknown backend {prefer!r}", hint=choose_one_of(prefer, capabilities.BACKENDS))
        candidates.append(prefer)  # a backend auto never picks alone (scripted) may still be asked for

    qualifying: list[tuple[str, str]] = []
    rejected: dict[str, str] = {}
    for name in candidates:
        if name in unfit:
            rejected[name] = unfit[name]
            continue
        column = capabilities.column(name)
        usable = auth.usable_modes_for(name)
        modes = [m for m in column.auth if m in usable]
        if column.auth and not modes:
            rejected[name] = f"needs {' or '.join(AUTH_MODE_TITLES[m] for m in column.auth)}"
            continue
        missing = _missing(name, required)
        if missing:
            rejected[name] = f"does not support {', '.join(missing)}"
            continue
        found = auth.get_for(name, modes[0]) if modes else None
        via = found.summary() if found else "no credentials needed"
        qualifying.append((name, via))

    if not qualifying:
        raise RoutingError(_explain(auth, required, rejected), hint=_hint(auth, required, candidates))

    def rank(entry: tuple[str, str]) -> tuple[int, int]:
        name = entry[0]
        return (sum(capabilities.level(name, c) == "partial" for c in required), candidates.index(name))

    ranked = sorted(qualifying, key=rank)
    chosen = next((e for e in ranked if e[0] == prefer), ranked[0])
    reason = f"{chosen[0]}: {chosen[1]}"
    if required:
        levels = ", ".join(f"{c} {capabilities.level(chosen[0], c)}" for c in required)
        reason += f"; requires {levels}"
    if prefer is not None and chosen[0] != prefer:
        reason += f" (preferred {prefer} {rejected[prefer]})"
    return BackendSelection(
        backend=chosen[0], reason=reason, alternatives=tuple(name for name, _ in ranked if name != chosen[0])
    )


def _explain(auth: AuthReport, required: list[str], rejected: dict[str, str]) -> str:
    if not any(auth.usable_modes_for(name) for name in rejected) and all(
        r.startswith("needs ") for r in rejected.values()
    ):
        found = f"; found {auth.describe()}" if auth.modes else ""
        return f"no backend can run: no usable credentials{found}"
    per_backend = "; ".join(f"{name} {why}" for name, why in rejected.items())
    need = f" offering {', '.join(required)}" if required else ""
    return f"no backend{need} can run with the credentials present: {per_backend}"


def _hint(auth: AuthReport, required: list[str], candidates: list[str]) -> str:
    """What to change: the credentials of a backend that has the capabilities, or fewer requirements."""
    capable = [name for name in candidates if not _missing(name, required)]
    if not capable:
        return "no backend offers all of these; drop a requirement (see `unified capabilities`)"
    modes = []
    for name in capable:
        modes += [m for m in capabilities.column(name).auth if m not in modes]
    hint = f"for {', '.join(capable)}: " + ", or ".join(_AUTH_HINTS[m] for m in modes)
    if not any(auth.usable_modes_for(name) for name in candidates):
        hint += " (to try unified without any: `unified demo` runs every backend against local fake servers)"
    return hint


def requirements_of(params: ExecuteParams) -> set[str]:
    """The capabilities a run needs, derived from what the caller asked for."""
    required: set[str] = set()
    if params.resume:
        required.add("session_resume")
    if params.images:
        required.add("image_input")
    if params.mcp_servers:
        required.add("mcp")
    if params.approval_mode == "plan":
        required.add("plan_mode")
    if params.thinking is not None and params.thinking.include_thoughts:
        required.add("thinking")
    if params.on_user_input is not None and params.approval_mode in ("default", "auto_edit"):
        # The caller wants to be asked before writes and shell commands. A handler does not make
        # `user_input` a requirement: it is the ability to answer, and a model that cannot ask
        # still does the task, so demanding it would exclude backends for nothing.
        required.add("permission_requests")
    return required


def select_backend_for(params: ExecuteParams, prefer: str | None = None, only: str | None = None) -> BackendSelection:
    """`select_backend` for one run: the credentials of this process and the needs of `params`.

    A need no backend can meet because of the model itself (thoughts from a model that does not
    think, per the model facts of `unified._internal.models`) is a `RoutingError` naming the model.
    """
    from unified._internal.models import UNKNOWN, profile

    model = profile(params.model)
    wants_thoughts = params.thinking is not None and params.thinking.include_thoughts
    if wants_thoughts and model is not UNKNOWN and model.thinking == "none":
        raise RoutingError(
            f"{params.model} does not think, so no backend can return its thoughts",
            hint="set thinking.include_thoughts to false, or choose a thinking model (e.g. gemini-3-flash-preview)",
        )
    auth, unfit = options_auth(params, detect_auth())
    return select_backend(auth, requirements_of(params), prefer=prefer, only=only, unfit=unfit)


_OPTIONS: dict[str, str] = {
    "gemini-cli": "unified._adapters.gemini_cli._options:GeminiCliOptions",
    "generate-content": "unified._adapters.generate_content._options:GenerateContentOptions",
    "interactions": "unified._adapters.interactions._options:InteractionsOptions",
    "claude-code": "unified._adapters.claude_code._options:ClaudeCodeOptions",
    "codex": "unified._adapters.codex._options:CodexOptions",
}
"""Backend -> its typed options (SDK-free modules), so routing reads credentials given in code: every
backend that takes credentials in its options, or `auto` could not resume its sessions with them."""


def _options_model(backend: str) -> type[BackendOptions] | None:
    path = _OPTIONS.get(backend)
    if path is None:
        return None
    module, _, name = path.partition(":")
    model = getattr(importlib.import_module(module), name)
    if not (isinstance(model, type) and issubclass(model, BackendOptions)):
        raise TypeError(f"{path} is not a BackendOptions model")
    return model


def options_auth(params: ExecuteParams, auth: AuthReport) -> tuple[AuthReport, dict[str, str]]:
    """`auth` with the credentials the run gives in code (`backend_options`), and the backends they are not for.

    Typed options (`GenerateContentOptions(api_key=..., base_url=...)`) are for their backend alone; a
    dict for every backend whose options take its keys. Each such backend is judged by the same
    resolution its run uses: the API backends' `resolve_api_auth` with the options' `api_key`,
    `vertexai`, `project`, `location`, `base_url` and `credentials`; gemini-cli's `detect_cli_auth` and
    claude-code's `claude_code_modes` over the environment plus their `env` option (and claude-code's `home`,
    where a Claude login lives); codex's `openai_modes` with its `api_key` and `base_url` options in place of
    OPENAI_API_KEY and OPENAI_BASE_URL. So `auto` routes, and resumes, on credentials in code.
    """
    raw = params.backend_options
    if isinstance(raw, dict) and not raw:
        return auth, {}
    unfit: dict[str, str] = {}
    for backend in _OPTIONS:
        model = _options_model(backend)
        assert model is not None
        if isinstance(raw, BackendOptions) and not isinstance(raw, model):
            unfit[backend] = f"does not take {type(raw).__name__} (backend_options are for another backend)"
            continue
        try:
            options = raw if isinstance(raw, model) else model.model_validate(dict(raw))
        except ValueError:  # pydantic's ValidationError: these keys are another backend's
            unfit[backend] = f"does not take these backend_options (its keys: {', '.join(sorted(model.model_fields))})"
            continue
        auth = auth.with_backend(backend, _modes_of(backend, options))
    return auth, unfit


def _modes_of(backend: str, options: BackendOptions) -> tuple[AuthMode, ...]:
    """The auth modes `backend` has with `options` (and the environment)."""
    env = dict(os.environ)
    user_home = Path(env.get("HOME") or Path.home())
    extra: dict[str, str] = getattr(options, "env", None) or {}
    if backend == "gemini-cli":
        return detect_cli_auth({**env, **extra})
    if backend == "claude-code":
        home = getattr(options, "home", None) or claude_code_home(env)  # the run's own lookup: not `env`'s
        return tuple(claude_code_modes({**env, **extra}, home, user_home))
    if backend == "codex":  # the run reads its key and URL from these options, else the environment
        given = {"OPENAI_API_KEY": getattr(options, "api_key", None)}
        given["OPENAI_BASE_URL"] = getattr(options, "base_url", None)
        return tuple(openai_modes({**env, **{k: v for k, v in given.items() if v}}, user_home))
    fields = {k: getattr(options, k, None) for k in ("api_key", "vertexai", "project", "location", "base_url")}
    api = resolve_api_auth(env, credentials=getattr(options, "credentials", None) is not None, **fields)
    return tuple(m for m in api_modes(api, env, user_home) if m.mode != "code_assist")
