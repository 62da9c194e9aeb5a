"""The capability matrix: complete, valid, and in sync with docs/capabilities.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from unified import capabilities
from unified.capabilities import CAPABILITIES, LEVELS, MATRIX, load_matrix, render_markdown
from unified.types import BackendName

REPO = Path(__file__).resolve().parents[2]
REQUIRED = {
    "streaming_text",
    "thinking",
    "thought_signatures",
    "tool_use",
    "server_side_tools",
    "subagent_lifecycle",
    "subagent_ids_on_deltas",
    "user_input",
    "permission_requests",
    "plan_mode",
    "session_resume",
    "mcp",
    "image_input",
    "cancellation",
    "usage_accuracy",
    "background_agents",
}


def test_every_backend_has_a_level_and_a_note_for_every_capability() -> None:
    assert set(CAPABILITIES) >= REQUIRED
    assert set(get_args(BackendName)) <= set(MATRIX.backends)
    for backend in MATRIX.backends.values():
        assert set(backend.cells) == set(CAPABILITIES)
        for name, cell in backend.cells.items():
            assert cell.level in LEVELS, (backend.name, name)
            assert cell.note.strip(), (backend.name, name)


def test_stream_json_is_a_variant_that_loses_thoughts_and_subagent_detail() -> None:
    variant = MATRIX.backends["gemini-cli/stream-json"]
    assert variant.variant_of == "gemini-cli"
    assert not variant.auto
    assert capabilities.level("gemini-cli/stream-json", "thinking") == "none"
    assert capabilities.level("gemini-cli/stream-json", "subagent_ids_on_deltas") == "none"


def test_first_levels_from_the_field_notes() -> None:
    assert capabilities.level("gemini-cli", "thinking") == "full"
    assert "replace=true" in capabilities.note("gemini-cli", "thinking")
    assert capabilities.level("interactions", "thinking") == "full"
    assert "replace=false" in capabilities.note("interactions", "thinking")
    assert capabilities.level("generate-content", "server_side_tools") == "partial"
    assert capabilities.level("interactions", "background_agents") == "full"
    assert capabilities.level("gemini-cli", "usage_accuracy") == "partial"


def test_snapshot_and_lookup_errors() -> None:
    snap = capabilities.snapshot("interactions")
    assert list(snap) == list(CAPABILITIES)
    assert snap["background_agents"] == "full"
    with pytest.raises(KeyError, match="unknown backend"):
        capabilities.level("claude", "thinking")
    with pytest.raises(KeyError, match="unknown capability"):
        capabilities.level("interactions", "teleport")


def test_invalid_data_is_refused_at_load() -> None:
    packaged = (REPO / "src" / "unified" / "capabilities.toml").read_text(encoding="utf-8")
    broken_level = packaged.replace(
        'image_input = { level = "full", note = "inline_data parts." }', 'image_input = { level = "great", note = "x" }'
    )
    assert broken_level != packaged
    with pytest.raises(ValueError, match="image_input needs a level"):
        load_matrix(broken_level)
    missing_cell = packaged.replace('background_agents = { level = "none", note = "Runs in process." }\n', "")
    with pytest.raises(ValueError, match=r"missing \['background_agents'\]"):
        load_matrix(missing_cell)


def test_docs_are_in_sync() -> None:
    committed = (REPO / "docs" / "capabilities.md").read_text(encoding="utf-8")
    assert committed == render_markdown(), (
        f"docs/capabilities.md is out of date; regenerate it with `{capabilities.REGENERATE_COMMAND}`"
    )


def test_markdown_names_every_capability_and_backend() -> None:
    text = render_markdown()
    for name in CAPABILITIES:
        assert f"### `{name}`" in text
    for backend in MATRIX.backends:
        assert f"`{backend}`" in text


@pytest.mark.e2e  # runs a real subprocess
def test_module_command_prints_markdown_and_json() -> None:
    markdown = subprocess.run(
        [sys.executable, "-m", "unified.capabilities", "--markdown"], capture_output=True, text=True, check=True
    )
    assert markdown.stdout == render_markdown()
    as_json = subprocess.run(
        [sys.executable, "-m", "unified.capabilities", "--json"], capture_output=True, text=True, check=True
    )
    assert json.loads(as_json.stdout) == capabilities.to_json()
