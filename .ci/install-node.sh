#!/usr/bin/env bash
# Install the pinned Node.js LTS the test suite runs the agent CLIs on into the project-local .node/
# (npm's `node` package: it fetches the platform's official build, `node-<os>-<arch>`, from the npm
# registry). Idempotent: does nothing when the pinned version is already there.
#
# Why the tests do not use the machine's Node: the suite starts the gemini CLI some 320 times, and
# most of a start's CPU is V8 compiling the CLI's bundle. Node 22.1+ keeps that compiled code in
# NODE_COMPILE_CACHE (scripts/test points every start at one cache); Node 20, which this machine
# has, cannot. Measured on 47 gemini e2e tests, 2 workers: Node 20 81.8 s CPU and 57 s wall, this
# Node with the shared cache 58.4 s and 35 s (Node 24.21 with it: 67.0 s and 49 s).
set -euo pipefail

VERSION="22.23.3"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="$ROOT/.node"
NODE="$PREFIX/node_modules/.bin/node"

if [[ -x "$NODE" && "$("$NODE" --version 2>/dev/null || true)" == "v$VERSION" ]]; then
  echo "node $VERSION already installed in $PREFIX"
  exit 0
fi

echo "installing node@$VERSION into $PREFIX (found: $("$NODE" --version 2>/dev/null || echo none))"
npm install --prefix "$PREFIX" --no-audit --no-fund "node@$VERSION"
found="$("$NODE" --version)"
if [[ "$found" != "v$VERSION" ]]; then
  echo "error: npm installed node@$VERSION but $NODE says $found" >&2
  exit 1
fi
echo "node $found"
