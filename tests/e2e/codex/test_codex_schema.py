"""The app-server protocol of the pinned binary is the one kept in the repo (schemas/codex-app-server/).

A version bump that changes the protocol fails here, naming the files that differ; regenerate with the
commands in the failure message and read the diff of `ts/` before adapting the adapter.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from unified._adapters.codex._launch import PINNED_VERSION, native_binary

pytestmark = pytest.mark.e2e

KEPT = Path(__file__).resolve().parents[3] / "schemas" / "codex-app-server" / PINNED_VERSION
COMMANDS = (
    ("json", ["generate-json-schema", "--out"]),
    ("json-experimental", ["generate-json-schema", "--experimental", "--out"]),
    ("ts", ["generate-ts", "--out"]),
)


def manifest(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for folder, _ in COMMANDS
        for path in sorted((root / folder).rglob("*"))
        if path.is_file()
    }


def test_the_pinned_binary_generates_the_schema_kept_in_the_repo(codex_binary: Path, tmp_path: Path) -> None:
    binary = native_binary(codex_binary)
    home = tmp_path / "schema-home"  # a throwaway CODEX_HOME: generating needs none, and never touches ~/.codex
    home.mkdir()
    out = tmp_path / "generated"
    for folder, args in COMMANDS:
        subprocess.run(
            [str(binary), "app-server", *args, str(out / folder)],
            env={"HOME": str(home), "CODEX_HOME": str(home), "PATH": "/usr/bin:/bin"},
            check=True,
            capture_output=True,
            timeout=HANG_GUARD_S,
        )
    kept = dict(line.split(maxsplit=1)[::-1] for line in (KEPT / "MANIFEST.sha256").read_text().splitlines())
    made = manifest(out)
    added = sorted(set(made) - set(kept))
    removed = sorted(set(kept) - set(made))
    changed = sorted(name for name in set(made) & set(kept) if made[name] != kept[name])
    differences = added + removed + changed
    assert not differences, (
        f"codex {PINNED_VERSION}'s app-server protocol is not the one in {KEPT}: added {added[:20]}, "
        f"removed {removed[:20]}, changed {changed[:20]}. Regenerate it (see schemas/codex-app-server/README.md)."
    )
    for path in sorted(p for p in KEPT.rglob("*") if p.is_file() and p.name not in ("MANIFEST.sha256",)):
        relative = path.relative_to(KEPT)
        assert path.read_bytes() == (out / relative).read_bytes(), f"{relative} differs from what the binary says"
