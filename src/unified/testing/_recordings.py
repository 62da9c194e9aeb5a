"""Real recordings of real Gemini models, shipped with `unified.testing` (see recordings/README.md)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def recordings_dir() -> Path:
    """The folder of `*.responses` files (the Gemini CLI's `--fake-responses` JSONL format)."""
    return Path(str(resources.files("unified.testing") / "recordings"))


def recordings() -> list[Path]:
    """Every recording, sorted by name: playable by FakeGemini and by `gemini --fake-responses`."""
    return sorted(recordings_dir().glob("*.responses"))
