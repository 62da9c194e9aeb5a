"""Bad input round 11: `unified run --history FILE` took `{}` (every field of a conversation has a default), and any
other JSON object with no turns, as an empty conversation, and ran a fresh session: a wrong file went unsaid. It is
refused now (exit 2), naming what a conversation must hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from unified._cli import main as cli


@pytest.mark.parametrize(
    "text",
    ["{}", '{"turns": []}', '{"format": "unified.conversation", "version": 1}', '{"system_instruction": "be brief"}'],
)
def test_a_history_with_no_turns_is_refused_naming_what_a_conversation_holds(
    isolated_home: Path, tmp_path: Path, text: str
) -> None:
    result = CliRunner().invoke(cli.app, ["run", "--backend", "scripted", "--history", "-", "hi"], input=text)
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: --history - holds no turns")
    assert "a conversation must hold `turns`" in line
    assert "leave --history out" in line


def test_a_history_with_a_turn_still_runs(isolated_home: Path, tmp_path: Path) -> None:
    text = json.dumps({"turns": [{"role": "user", "parts": [{"type": "text", "text": "earlier"}]}]})
    result = CliRunner().invoke(cli.app, ["run", "--backend", "scripted", "--history", "-", "hi"], input=text)
    assert result.exit_code == 0, result.output
