#!/usr/bin/env bash
# Builds the real binaries of the real-Kubernetes suite (npm run test:kube) from the Go module proxy:
# kube-apiserver v1.34.4 and v1.37.2, kube-controller-manager and kube-scheduler v1.34.4, etcd v3.6.4,
# and the suite's Go programs (test/kube/go). Each
# module under test/kube/build/ pins one release (k8s.io/kubernetes at the tag, every staging module
# replaced by its v0.x tag). A binary is rebuilt only when its module files, its own sources (test/kube/go) or this script changed
# (a stamp beside it holds their hash); Go's build cache makes a rebuild after a change cheap.
# Prints one line per binary with what it reports of its version, then the total time.
# Usage: scripts/kube-build.sh [outdir]   (default .cache/kube/bin)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$ROOT/.cache/kube/bin}"
mkdir -p "$OUT"
# One build at a time into $OUT: .ci/run builds in the background while other suites run, and
# test:kube's own call (scripts/kube-bin.sh) then waits here and finds every binary built.
exec 9>"$OUT/.build.lock"
flock 9
command -v go >/dev/null || { echo "kube-build: go is not installed (Go >= 1.26 builds kube-apiserver v1.37)" >&2; exit 2; }
export GOFLAGS="${GOFLAGS:--buildvcs=false} -mod=readonly"
START=$(date +%s)

# build <module dir> <package> <output name> [ldflags]
build() {
  local dir="$1" pkg="$2" name="$3" ld="${4:-}"
  local stamp srcs=()
  # The suite's own programs (./cmd/x) are rebuilt when their sources change too.
  [[ "$pkg" == ./* ]] && mapfile -t srcs < <(find "$dir/$pkg" -name '*.go' | sort)
  stamp="$(cat "$dir/go.mod" "$dir/go.sum" "$0" "${srcs[@]}" | sha256sum | cut -c1-16)"
  if [[ -x "$OUT/$name" && "$(cat "$OUT/$name.stamp" 2>/dev/null)" == "$stamp" ]]; then
    return 0
  fi
  local t0=$(date +%s)
  echo "kube-build: building $name ($pkg) ..." >&2
  (cd "$dir" && go build -trimpath -ldflags "-s -w $ld" -o "$OUT/$name.tmp" "$pkg")
  mv "$OUT/$name.tmp" "$OUT/$name"
  echo "$stamp" > "$OUT/$name.stamp"
  echo "kube-build: built $name in $(( $(date +%s) - t0 )) s" >&2
}

# What kube-apiserver --version and /version report: the release's own tag, as Kubernetes' build
# sets it (hack/lib/version.sh), so the suite can print the versions the binaries report.
kube_ld() {
  local v="$1" minor
  minor="$(echo "$v" | cut -d. -f2)"
  echo "-X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
}

for v in v1.34.4 v1.37.2; do
  build "$ROOT/test/kube/build/$v" k8s.io/kubernetes/cmd/kube-apiserver "kube-apiserver-$v" "$(kube_ld "$v")"
done
# The old release's controllers (issue 39): kube-controller-manager and kube-scheduler run on the
# old node, through the mvproxy beside its apiserver, as kubeadm would connect them.
for c in kube-controller-manager kube-scheduler; do
  build "$ROOT/test/kube/build/v1.34.4" "k8s.io/kubernetes/cmd/$c" "$c-v1.34.4" "$(kube_ld v1.34.4)"
done
build "$ROOT/test/kube/build/etcd" go.etcd.io/etcd/server/v3 etcd
if [[ -f "$ROOT/test/kube/go/go.mod" ]]; then
  for p in "$ROOT"/test/kube/go/cmd/*/; do
    build "$ROOT/test/kube/go" "./cmd/$(basename "$p")" "$(basename "$p")"
  done
fi

for v in v1.34.4 v1.37.2; do echo "kube-apiserver-$v: $("$OUT/kube-apiserver-$v" --version)"; done
for c in kube-controller-manager kube-scheduler; do echo "$c-v1.34.4: $("$OUT/$c-v1.34.4" --version)"; done
echo "etcd: $("$OUT/etcd" --version | head -1)"
echo "kube-build: done in $(( $(date +%s) - START )) s"
