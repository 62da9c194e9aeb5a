#!/usr/bin/env bash
# Install the pinned Gemini CLI into the project-local .gemini-cli/ (never globally).
# Idempotent: does nothing when the pinned version is already there.
set -euo pipefail

VERSION="0.61.0"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="$ROOT/.gemini-cli"
MANIFEST="$PREFIX/node_modules/@google/gemini-cli/package.json"

installed=""
if [[ -f "$MANIFEST" ]]; then
  installed="$(node -p "require('$MANIFEST').version" 2>/dev/null || true)"
fi

if [[ "$installed" == "$VERSION" && -x "$PREFIX/node_modules/.bin/gemini" ]]; then
  echo "gemini-cli $VERSION already installed in $PREFIX"
  exit 0
fi

echo "installing @google/gemini-cli@$VERSION into $PREFIX (found: ${installed:-none})"
npm install --prefix "$PREFIX" --no-audit --no-fund "@google/gemini-cli@$VERSION"
"$PREFIX/node_modules/.bin/gemini" --version
