#!/usr/bin/env bash
# Install the pinned Claude Code CLI into the project-local .claude-code/ (never globally).
# Idempotent: does nothing when the pinned version is already there. The npm package carries a
# native executable (~400 MB): Node is needed to install it, not to run it.
set -euo pipefail

VERSION="2.1.332"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="$ROOT/.claude-code"
MANIFEST="$PREFIX/node_modules/@anthropic-ai/claude-code/package.json"

installed=""
if [[ -f "$MANIFEST" ]]; then
  installed="$(node -p "require('$MANIFEST').version" 2>/dev/null || true)"
fi

if [[ "$installed" == "$VERSION" && -x "$PREFIX/node_modules/.bin/claude" ]]; then
  echo "claude-code $VERSION already installed in $PREFIX"
  exit 0
fi

echo "installing @anthropic-ai/claude-code@$VERSION into $PREFIX (found: ${installed:-none})"
npm install --prefix "$PREFIX" --no-audit --no-fund "@anthropic-ai/claude-code@$VERSION"
# --version needs no home; give it a throwaway one anyway, never the user's ~/.claude.
probe_home="$(mktemp -d)"
HOME="$probe_home" CLAUDE_CONFIG_DIR="$probe_home/.claude" DISABLE_AUTOUPDATER=1 \
  "$PREFIX/node_modules/.bin/claude" --version
rm -rf "$probe_home"
