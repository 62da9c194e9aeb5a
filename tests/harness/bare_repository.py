"""A bare git repository as plain files, planted by a test: what writes a user approved would leave (since red team
round 36 the model's write that completes one is asked), for the tests that pin what git run later does with it."""

from __future__ import annotations

from pathlib import Path

__all__ = ["plant_bare_repository"]


def plant_bare_repository(folder: Path, config: str) -> None:
    """The files git takes for a bare repository in `folder` (`HEAD`, `config`, `objects/`, `refs/`)."""
    files = {"HEAD": "ref: refs/heads/main\n", "config": config, "objects/.keep": "", "refs/heads/.keep": ""}
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
