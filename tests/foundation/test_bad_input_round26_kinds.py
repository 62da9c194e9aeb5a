"""Bad input round 26, new kinds: each case names what happened before (FAILED before) or is a pin of what was right."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.cli_main import in_process
from unified.errors import ConfigurationError
from unified.sessions import FileSessionStore

NOBODY = "~no-such-user-bad26/data"
"""A folder under the home of a user no machine has."""

# --- 1. a folder setting under an unknown user's home ----------------------------------------------------------------


def test_a_data_dir_under_an_unknown_users_home_is_said_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """FAILED before: `unified sessions list` ended "unexpected RuntimeError: Could not determine home directory. (a
    bug in unified ...)", exit 70. Now the stores that live there say why they are not listed, and the rest are."""
    monkeypatch.setenv("UNIFIED_DATA_DIR", NOBODY)
    done = in_process(capsys, "sessions", "list")
    assert "unexpected" not in done.stderr
    assert done.returncode == 0, done.stderr
    assert "the home directory of '~no-such-user-bad26' is not known here" in done.stderr
    assert "UNIFIED_DATA_DIR" in done.stderr


def test_a_store_root_under_an_unknown_users_home_is_a_configuration_error() -> None:
    """FAILED before: a bare RuntimeError from pathlib."""
    with pytest.raises(ConfigurationError, match="the home directory of '~no-such-user-bad26' is not known here"):
        FileSessionStore(NOBODY)


@pytest.mark.parametrize("name", ["UNIFIED_CODEX_HOME", "UNIFIED_DATA_DIR"])
def test_codex_home_under_an_unknown_users_home_names_the_variable(name: str) -> None:
    """FAILED before: the codex backend's set-up raised pathlib's bare RuntimeError."""
    from unified._adapters.codex._launch import codex_home
    from unified._adapters.codex._options import CodexOptions

    with pytest.raises(ConfigurationError) as caught:
        codex_home(CodexOptions(), {name: NOBODY})
    assert f"{name} '{NOBODY}' names no folder here" in caught.value.message


def test_a_cwd_under_an_unknown_users_home_still_says_so(tmp_path: Path) -> None:
    """Pin (round 23), through the one expansion now shared."""
    from pydantic import ValidationError

    from unified import ExecuteParams

    with pytest.raises(ValidationError, match="the home directory of '~no-such-user-bad26' is not known here"):
        ExecuteParams(prompt="hi", cwd=NOBODY)
