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
# The CLI writes into its home even for --version: give it a throwaway one, never the user's ~/.gemini.
probe_home="$(mktemp -d)"
HOME="$probe_home" GEMINI_CLI_HOME="$probe_home" "$PREFIX/node_modules/.bin/gemini" --version
rm -rf "$probe_home"
