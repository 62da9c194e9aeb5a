"""Real recordings of real Gemini models, kept with the tests (tests/recordings/README.md and
tests/recordings/real/README.md); the wheel does not carry them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["real_recordings", "real_recordings_dir", "real_recordings_manifest", "recordings", "recordings_dir"]


def recordings_dir() -> Path:
    """The folder of `*.responses` files (the Gemini CLI's `--fake-responses` JSONL format)."""
    return Path(__file__).resolve().parent.parent / "recordings"


def recordings() -> list[Path]:
    """Every recording of the first corpus, sorted by name: playable by FakeGemini and by `gemini --fake-responses`."""
    return sorted(recordings_dir().glob("*.responses"))


def real_recordings_dir() -> Path:
    """The second corpus: 94 recordings from the Gemini CLI's and the JS SDK's own test suites."""
    return recordings_dir() / "real"


def real_recordings_manifest() -> list[dict[str, Any]]:
    """One entry a recording of the second corpus: its source, models, request features and `play` mode
    (`as-is`, or `generateContent-as-one-chunk-stream` for files holding only unary answers)."""
    manifest = json.loads((real_recordings_dir() / "manifest.json").read_text(encoding="utf-8"))
    entries: list[dict[str, Any]] = manifest["recordings"]
    return entries


def real_recordings() -> list[Path]:
    """Every recording of the second corpus, in manifest order (`<group>/<name>.responses`)."""
    return [real_recordings_dir() / entry["file"] for entry in real_recordings_manifest()]
