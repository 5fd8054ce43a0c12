#!/usr/bin/env bash
# A/B of one change, the way bench/README.md's table of issue 18 changes was measured: bench runs
# alternate between src/ as of a git ref ("base") and src/ as in the working tree ("change"),
# base, change, base, change, …, so drift of the shared machine hits both alike. Each run writes
# bench/results/<timestamp>-ab-<label>-{base,change}.json; compare ratios within a pair.
#
#   bash bench/ab.sh HEAD~1 coalesce --only uws/list,peer/list,nginx/list --rounds 2 --tools wrk
#
# The working tree's src/ is restored on exit, whatever happens (it is copied aside first).
set -euo pipefail
cd "$(dirname "$0")/.."
ref=${1:?usage: bash bench/ab.sh GIT-REF LABEL [bench/run.ts options]}
label=${2:?usage: bash bench/ab.sh GIT-REF LABEL [bench/run.ts options]}
shift 2
pairs=${AB_PAIRS:-2}
tmp=$(mktemp -d)
mkdir -p "$tmp/change" "$tmp/base" && cp -a src "$tmp/change/"
git archive "$ref" src | tar -x -C "$tmp/base"
restore() { rm -rf src && cp -a "$tmp/change/src" src && rm -rf "$tmp"; }
trap restore EXIT
gnode=$(scripts/node-glibc.sh 2>/dev/null || command -v node)
for i in $(seq 1 "$pairs"); do
  for v in base change; do
    rm -rf src && cp -a "$tmp/$v/src" src
    echo "== $v, pair $i"
    before=$(ls -t bench/results/*Z.json 2>/dev/null | head -n 1)
    PATH="$(dirname "$gnode"):$PATH" "$gnode" --import tsx bench/run.ts --no-watch --no-open-watches "$@" | grep -E '^\| (mvproxy|nginx|HAProxy|Go|floor)' | awk -F'|' '{print $2 "|" $8 "| CPU µs/req" $9}'
    out=$(ls -t bench/results/*Z.json | head -n 1)
    [ "$out" != "$before" ] && for f in "${out%.json}".json "${out%.json}".svg; do [ -f "$f" ] && mv "$f" "${f%.*}-ab-$label-$v.${f##*.}"; done
  done
done
