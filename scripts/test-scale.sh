#!/usr/bin/env bash
# npm run test:scale (issue 33 §4): client-go watches at scale through both front ends, local and
# peer route, against real kube-apiserver v1.37.2 (bench/scale.ts says what it checks). Builds what
# is missing as test-kube.sh does (scripts/kube-build.sh, the watchload client included; its output
# goes to .cache/kube/build.log). Arguments go to bench/scale.ts (--watches N, --cases a,b).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/kube-bin.sh test:scale
# Each watch holds a descriptor in the client (one per connection over HTTP/1.1) and in mvproxy: the
# soft limit up to the hard one for every child (Go and Node.js raise their own too; this covers
# the rest). 5,000 HTTP/1.1 watches need ~5,000 in the client and ~5,000 in the entry mvproxy.
ulimit -S -n "$(ulimit -H -n)"
exec node --import tsx bench/scale.ts "$@"
