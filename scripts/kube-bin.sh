# Sourced by test-kube.sh and test-scale.sh (not run): builds what is missing of the real binaries
# (scripts/kube-build.sh: kube-apiserver v1.34.4 and v1.37.2, etcd v3.6.4, the Go clients; its
# output goes to .cache/kube/build.log) and exports MVPROXY_KUBE_BIN. $1: the caller's name, for
# the message when the build fails.
bin="${MVPROXY_KUBE_BIN:-$PWD/.cache/kube/bin}"
mkdir -p "$bin"
log="$bin/../build.log"
if ! scripts/kube-build.sh "$bin" > "$log" 2>&1; then
  cat "$log" >&2
  echo "$1: building the real binaries failed (log above, $log)" >&2
  exit 1
fi
export MVPROXY_KUBE_BIN="$bin"
