"""Bad input round 7 for `unified sessions list --cwd`: a path with a typo (or a file) listed nothing and said "no
sessions yet: `unified run` starts one", though sessions were kept for other projects. A project's directory may
be gone while its sessions stay listable, so the path is not refused; what is said of an empty listing is true."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from unified._cli import main as cli


@pytest.mark.parametrize("kind", ["missing", "file", "directory"])
def test_an_empty_listing_of_a_cwd_names_it_and_says_when_it_is_no_directory(
    kind: str, isolated_home: Path, tmp_path: Path
) -> None:
    path = tmp_path / "projekt"
    if kind == "file":
        path.write_text("")
    elif kind == "directory":
        path.mkdir()
    result = CliRunner().invoke(cli.app, ["sessions", "list", "--backend", "codex", "--cwd", str(path)])
    assert result.exit_code == 0, result.output
    missing = {
        "directory": "",
        "file": " (a file, not a directory: check --cwd)",  # round 9: it said "no such directory here"
        "missing": " (no such directory here: check --cwd)",
    }[kind]
    assert result.output.strip() == f"no codex sessions in the project at {path}{missing}"
    assert "yet" not in result.output
