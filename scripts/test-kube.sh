#!/usr/bin/env bash
# npm run test:kube: the suite against real kube-apiservers (test/kube). Builds what is missing
# (scripts/kube-build.sh: kube-apiserver v1.34.4 and v1.37.2, etcd v3.6.4, the Go clients; its
# output goes to .cache/kube/build.log), prints the versions the binaries report as the first line,
# then runs the suite one file at a time: each file starts its own control plane (one etcd, two
# apiservers, an mvproxy pair per front end); two at once would not fit 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/kube-bin.sh test:kube
echo "kube-apiserver versions: $("$bin/kube-apiserver-v1.34.4" --version | awk '{print $2}') $("$bin/kube-apiserver-v1.37.2" --version | awk '{print $2}')"
grep -E '^(kube-build: (built|done)|etcd:)' "$log" || true
files=("$@")
[ ${#files[@]} -gt 0 ] || mapfile -t files < <(find test/kube -name '*.test.ts' | sort)
exec node --import tsx --test --test-concurrency=1 "${files[@]}"
