#!/usr/bin/env bash
# Install the pinned Codex CLI (@openai/codex and its platform package, which ships the native
# `codex`) into the project-local .codex-cli/ (never globally). Idempotent: does nothing when the
# pinned version is already there.
set -euo pipefail

VERSION="0.171.0"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="$ROOT/.codex-cli"
MANIFEST="$PREFIX/node_modules/@openai/codex/package.json"

installed=""
if [[ -f "$MANIFEST" ]]; then
  installed="$(node -p "require('$MANIFEST').version" 2>/dev/null || true)"
fi
native="$(ls "$PREFIX"/node_modules/@openai/codex-*/vendor/*/bin/codex 2>/dev/null | head -n 1 || true)"

if [[ "$installed" == "$VERSION" && -n "$native" && -x "$native" ]]; then
  echo "codex $VERSION already installed in $PREFIX"
  exit 0
fi

echo "installing @openai/codex@$VERSION into $PREFIX (found: ${installed:-none})"
npm install --prefix "$PREFIX" --no-audit --no-fund "@openai/codex@$VERSION"
native="$(ls "$PREFIX"/node_modules/@openai/codex-*/vendor/*/bin/codex 2>/dev/null | head -n 1 || true)"
if [[ -z "$native" ]]; then
  echo "error: npm installed @openai/codex@$VERSION but no platform package with a native codex" >&2
  exit 1
fi
# A throwaway CODEX_HOME for the probe: never the user's ~/.codex.
probe_home="$(mktemp -d)"
HOME="$probe_home" CODEX_HOME="$probe_home" "$native" --version
rm -rf "$probe_home"
