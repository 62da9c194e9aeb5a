"""The capability matrix: what each backend can do, read from the `capabilities.toml` shipped here.

The levels live in a data file, not in code, so that routing, `session_started.capabilities`,
`unified capabilities` and `docs/capabilities.md` can never disagree, and so that each backend's
engineers adjust one block of data when their adapter learns something. The file is validated
when this module is imported: a missing cell or an unknown level is an import-time error.

Regenerate the docs after editing the data: `python -m unified.capabilities --markdown > docs/capabilities.md`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from importlib.resources import files
from typing import Any, Literal, cast, get_args

from unified._auth import AUTH_MODES, AuthModeName
from unified.events import Provider, SupportLevel

__all__ = [
    "BACKENDS",
    "CAPABILITIES",
    "LEVELS",
    "MATRIX",
    "QUALIFYING_LEVELS",
    "TOOL_RESULTS_LAST",
    "BackendColumn",
    "Cell",
    "Difference",
    "Matrix",
    "ToolResultsLast",
    "cell",
    "column",
    "level",
    "load_matrix",
    "note",
    "render_markdown",
    "snapshot",
    "to_json",
    "tool_results_last",
]

LEVELS: tuple[SupportLevel, ...] = get_args(SupportLevel)
QUALIFYING_LEVELS: frozenset[SupportLevel] = frozenset({"full", "partial", "emulated"})
"""Levels that satisfy a required capability when routing."""

REGENERATE_COMMAND = "python -m unified.capabilities --markdown > docs/capabilities.md"

ToolResultsLast = Literal["sent", "continue_prompt"]
"""What a backend does with a history whose last turn is tool results the model has not answered (a `retry`
of it, or a failover between tool rounds): `sent` as it is, and the model answers the results (an API
backend); `continue_prompt`: the backend takes only a user's message last (an agent binary), so the tool round
is sent, then `unified.conversations.CONTINUE_PROMPT` as the user's turn."""
TOOL_RESULTS_LAST: tuple[ToolResultsLast, ...] = get_args(ToolResultsLast)
_PROVIDERS: tuple[Provider, ...] = get_args(Provider)
_NO_PROVIDER = "none"
"""`provider = "none"`: a backend with no model provider behind it (`scripted`)."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One backend's support for one capability, with the note that makes the level honest."""

    level: SupportLevel
    note: str


@dataclass(frozen=True, slots=True)
class Difference:
    """What a backend does otherwise than the others where they offer the same thing (a tool's output text,
    an answer it cannot carry), declared against the cell it belongs to, with the reason."""

    cell: str
    note: str


@dataclass(frozen=True, slots=True)
class BackendColumn:
    """One column of the matrix: a backend, or a transport variant of one (`variant_of`)."""

    name: str
    title: str
    description: str
    auth: tuple[AuthModeName, ...]
    auto: bool
    """Whether `backend="auto"` may choose it (never for variants and test backends)."""
    variant_of: str | None
    cells: Mapping[str, Cell]
    provider: Provider | None
    """The model provider behind it (`provider = "google"`; `"none"` in the file for a backend with no model,
    None here): whose signatures its model reads, whether a failover keeps the run's `model`
    (`unified.conversations.provider_of_backend`)."""
    tool_results_last: ToolResultsLast
    """What it does with a history that ends with tool results (`ToolResultsLast`)."""
    differences: Mapping[str, Difference] = field(default_factory=dict)
    """Name -> a declared difference (`[backends.<name>.differences]`); the conformance suite observes each."""


@dataclass(frozen=True, slots=True)
class Matrix:
    levels: Mapping[str, str]
    auth: Mapping[str, str]
    capabilities: Mapping[str, str]
    """Capability name → what it means, in the file's order."""
    backends: Mapping[str, BackendColumn]


def _text(table: Mapping[str, Any], key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"capabilities.toml: {where} needs a non-empty string {key!r}")
    return value


def _strings(table: Any, where: str) -> dict[str, str]:
    if not isinstance(table, dict):
        raise ValueError(f"capabilities.toml: [{where}] is missing")
    return {name: _text(table, name, f"[{where}]") for name in table}


def load_matrix(text: str | None = None) -> Matrix:
    """Parse and validate the matrix (the packaged file unless `text` is given)."""
    if text is None:
        text = files("unified").joinpath("capabilities.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    levels = _strings(data.get("levels"), "levels")
    if set(levels) != set(LEVELS):
        raise ValueError(f"capabilities.toml: [levels] must describe exactly {', '.join(LEVELS)}")
    auth = _strings(data.get("auth"), "auth")
    if set(auth) != set(AUTH_MODES):
        raise ValueError(f"capabilities.toml: [auth] must describe exactly {', '.join(AUTH_MODES)}")
    capabilities = _strings(data.get("capabilities"), "capabilities")
    raw_backends = data.get("backends")
    if not isinstance(raw_backends, dict) or not raw_backends:
        raise ValueError("capabilities.toml: no [backends.*] tables")
    backends = {name: _column(name, raw, capabilities) for name, raw in raw_backends.items()}
    for column in backends.values():
        if column.variant_of is not None and column.variant_of not in backends:
            raise ValueError(f"capabilities.toml: {column.name} is a variant of unknown backend {column.variant_of!r}")
        if column.variant_of is not None and column.provider != backends[column.variant_of].provider:
            raise ValueError(f"capabilities.toml: {column.name} needs the provider of {column.variant_of}, its backend")
    return Matrix(levels=levels, auth=auth, capabilities=capabilities, backends=backends)


def _column(name: str, raw: Any, capabilities: Mapping[str, str]) -> BackendColumn:
    where = f"[backends.{name}]"
    if not isinstance(raw, dict):
        raise ValueError(f"capabilities.toml: {where} is not a table")
    auth = raw.get("auth", [])
    if not isinstance(auth, list) or any(mode not in AUTH_MODES for mode in auth):
        raise ValueError(f"capabilities.toml: {where} auth must list modes among {', '.join(AUTH_MODES)}")
    variant_of = raw.get("variant_of")
    if variant_of is not None and not isinstance(variant_of, str):
        raise ValueError(f"capabilities.toml: {where} variant_of must be a backend name")
    raw_cells = raw.get("cells")
    if not isinstance(raw_cells, dict):
        raise ValueError(f"capabilities.toml: {where} has no cells table")
    unknown = sorted(set(raw_cells) - set(capabilities))
    missing = [c for c in capabilities if c not in raw_cells]
    if unknown or missing:
        raise ValueError(f"capabilities.toml: {where} cells: unknown {unknown}, missing {missing}")
    cells: dict[str, Cell] = {}
    for capability in capabilities:
        entry = raw_cells[capability]
        if not isinstance(entry, dict) or entry.get("level") not in LEVELS:
            raise ValueError(f"capabilities.toml: {where} {capability} needs a level among {', '.join(LEVELS)}")
        cells[capability] = Cell(
            level=cast("SupportLevel", entry["level"]), note=_text(entry, "note", f"{where} {capability}")
        )
    provider = raw.get("provider")
    if provider != _NO_PROVIDER and provider not in _PROVIDERS:
        raise ValueError(f"capabilities.toml: {where} needs a provider among {', '.join([*_PROVIDERS, _NO_PROVIDER])}")
    tool_results_last = raw.get("tool_results_last")
    if tool_results_last not in TOOL_RESULTS_LAST:
        raise ValueError(f"capabilities.toml: {where} needs a tool_results_last among {', '.join(TOOL_RESULTS_LAST)}")
    return BackendColumn(
        name=name,
        title=_text(raw, "title", where),
        description=_text(raw, "description", where),
        auth=tuple(auth),
        auto=bool(raw.get("auto", False)),
        variant_of=variant_of,
        cells=cells,
        provider=None if provider == _NO_PROVIDER else cast("Provider", provider),
        tool_results_last=cast("ToolResultsLast", tool_results_last),
        differences=_differences(raw.get("differences", {}), capabilities, where),
    )


def _differences(raw: Any, capabilities: Mapping[str, str], where: str) -> dict[str, Difference]:
    if not isinstance(raw, dict):
        raise ValueError(f"capabilities.toml: {where} differences must be a table")
    found: dict[str, Difference] = {}
    for name, entry in raw.items():
        if not isinstance(entry, dict) or entry.get("cell") not in capabilities:
            raise ValueError(f"capabilities.toml: {where} difference {name!r} needs a cell among the capabilities")
        found[name] = Difference(cell=str(entry["cell"]), note=_text(entry, "note", f"{where} difference {name}"))
    return found


MATRIX = load_matrix()
CAPABILITIES: Mapping[str, str] = MATRIX.capabilities
"""Every capability name and what it means."""
BACKENDS: tuple[str, ...] = tuple(MATRIX.backends)
"""Every column: the backends and their transport variants (e.g. `gemini-cli/stream-json`)."""


def column(backend: str) -> BackendColumn:
    """One column by name; like a mapping, an unknown name is a KeyError (naming the choices)."""
    try:
        return MATRIX.backends[backend]
    except KeyError:
        raise KeyError(f"unknown backend {backend!r}; choose one of: {', '.join(BACKENDS)}") from None


def cell(backend: str, capability: str) -> Cell:
    """`backend`'s level and note for `capability`; an unknown one is a `KeyError` naming the known ones."""
    cells = column(backend).cells
    try:
        return cells[capability]
    except KeyError:
        raise KeyError(f"unknown capability {capability!r}; choose among: {', '.join(CAPABILITIES)}") from None


def level(backend: str, capability: str) -> SupportLevel:
    """`backend`'s level for `capability`: full, partial, emulated or none."""
    return cell(backend, capability).level


def note(backend: str, capability: str) -> str:
    """What limits `backend`'s level for `capability` (docs/capabilities.md), or how unified builds it."""
    return cell(backend, capability).note


def tool_results_last(backend: str) -> ToolResultsLast:
    """What `backend` does with a history that ends with tool results (`ToolResultsLast`): its block's
    `tool_results_last`; `sent` for a backend the matrix does not know (a registered one), as the API backends."""
    found = MATRIX.backends.get(backend)
    return found.tool_results_last if found is not None else "sent"


def snapshot(backend: str) -> dict[str, SupportLevel]:
    """Capability → level for one backend: what `session_started.capabilities` carries."""
    return {name: c.level for name, c in column(backend).cells.items()}


def to_json() -> dict[str, Any]:
    """The whole matrix as plain data (`unified capabilities --json`)."""
    return {
        "levels": dict(MATRIX.levels),
        "auth": dict(MATRIX.auth),
        "capabilities": dict(MATRIX.capabilities),
        "backends": {
            b.name: {
                "title": b.title,
                "description": b.description,
                "auth": list(b.auth),
                "auto": b.auto,
                "variant_of": b.variant_of,
                "provider": b.provider,
                "tool_results_last": b.tool_results_last,
                "cells": {name: {"level": c.level, "note": c.note} for name, c in b.cells.items()},
                "differences": {name: {"cell": d.cell, "note": d.note} for name, d in b.differences.items()},
            }
            for b in MATRIX.backends.values()
        },
    }


def _md(text: str) -> str:
    return escape(text, quote=False).replace("|", "\\|")


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def render_markdown() -> str:
    """`docs/capabilities.md`: a summary table, then every capability with each backend's note."""
    backends = list(MATRIX.backends.values())
    out = [
        "<!-- Generated from src/unified/capabilities.toml: do not edit by hand. -->",
        f"<!-- Regenerate: {REGENERATE_COMMAND} -->",
        "",
        "# Capability matrix",
        "",
        'What each backend can do. The same data feeds `backend="auto"` routing, the `capabilities` '
        "snapshot of `session_started` and `unified capabilities`.",
        "",
        "Levels:",
        "",
        *[f"- **{name}**: {_md(text)}" for name, text in MATRIX.levels.items()],
        "",
        "Routing accepts full, partial and emulated for a required capability, never none.",
        "",
        "## Summary",
        "",
        _row(["capability", *[f"`{b.name}`" for b in backends]]),
        _row(["---"] * (len(backends) + 1)),
        *[_row([f"`{cap}`", *[b.cells[cap].level for b in backends]]) for cap in MATRIX.capabilities],
        "",
        "## Backends",
        "",
        _row(["backend", "what it is", "auth modes", "chosen by auto", "model provider", "tool results last"]),
        _row(["---"] * 6),
        *[
            _row(
                [
                    f"`{b.name}`",
                    _md(b.description),
                    ", ".join(b.auth) or "none needed",
                    "yes" if b.auto else "no",
                    b.provider or "none",
                    b.tool_results_last,
                ]
            )
            for b in backends
        ],
        "",
        "Auth modes:",
        "",
        *[f"- **{name}**: {_md(text)}" for name, text in MATRIX.auth.items()],
        "",
        "Model provider: whose signatures the backend's model reads (a signature never crosses providers), and "
        "whether a failover keeps the run's `model` (docs/conversations.md).",
        "",
        "Tool results last: what the backend does with a history whose last turn is tool results the model has "
        "not answered (a `retry` of it, or a failover between tool rounds):",
        "",
        "- **sent**: sent as it is; the model answers the results.",
        "- **continue_prompt**: the backend takes only a user's message last (an agent binary): the whole tool "
        "round is sent, then a user's message telling the model to go on from it "
        "(`unified.conversations.CONTINUE_PROMPT`).",
        "",
        "## Capabilities",
    ]
    for cap, meaning in MATRIX.capabilities.items():
        out += [
            "",
            f"### `{cap}`",
            "",
            _md(meaning),
            "",
            _row(["backend", "level", "note"]),
            _row(["---"] * 3),
            *[_row([f"`{b.name}`", b.cells[cap].level, _md(b.cells[cap].note)]) for b in backends],
        ]
        declared = [(b, name, d) for b in backends for name, d in b.differences.items() if d.cell == cap]
        if declared:
            out += ["", "Declared differences:", ""]
            out += [f"- `{b.name}` **{name}**: {_md(d.note)}" for b, name, d in declared]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m unified.capabilities", description=__doc__)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--markdown", action="store_true", help="print docs/capabilities.md")
    group.add_argument("--json", action="store_true", help="print the matrix as JSON")
    args = parser.parse_args(argv)
    sys.stdout.write(render_markdown() if args.markdown else json.dumps(to_json(), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
