#!/usr/bin/env bash
# npm run test:kube: the suite against real kube-apiservers (test/kube). Builds what is missing
# (scripts/kube-build.sh: kube-apiserver v1.34.4 and v1.37.2, etcd, the Go clients; cold ~N min,
# warm seconds), prints the versions the binaries report, then runs the suite one file at a time
# (each file starts its own control plane; two would not fit 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${MVPROXY_KUBE_BIN:-$PWD/.cache/kube/bin}"
scripts/kube-build.sh "$bin" >&2
echo "kube-apiserver versions: $("$bin/kube-apiserver-v1.34.4" --version | awk '{print $2}') $("$bin/kube-apiserver-v1.37.2" --version | awk '{print $2}')"
export MVPROXY_KUBE_BIN="$bin"
files=("$@")
[ ${#files[@]} -gt 0 ] || mapfile -t files < <(find test/kube -name '*.test.ts' | sort)
exec node --import tsx --test --test-concurrency=1 --test-timeout=900000 "${files[@]}"
