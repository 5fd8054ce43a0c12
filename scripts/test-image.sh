#!/usr/bin/env bash
# npm run test:image: builds the image from the Dockerfile with podman (scripts/image.sh: podman,
# runc and mmdebstrap from Debian, local base images, no registry) and runs it:
# 1. test/podman: the image on its own (--version, `demo` reached from the host with kubectl and
#    picking uWS, the HEALTHCHECK, flags as arguments, its user and configuration);
# 2. test/kube/deploy.test.ts, its image part only: deploy/static-pod.yaml played by podman beside
#    real kube-apiservers v1.34.4 and v1.37.2 with a kubeadm-style PKI (npm run test:kube runs the
#    same file from source; scripts/test-kube.sh builds the real binaries when missing).
# Prints the image, its size and how long the build took first.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
built=$(scripts/image.sh | tail -n 1)
echo "test:image: $built (built in $(( $(date +%s) - t0 )) s)"
export MVPROXY_IMAGE="${built%% *}" MVPROXY_REQUIRE_IMAGE=1
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/scripts/podman/containers.conf}"
node --import tsx --test --test-concurrency=1 test/podman/*.test.ts
bash scripts/test-kube.sh --test-name-pattern='from the image' test/kube/deploy.test.ts
echo "test:image: done in $(( $(date +%s) - t0 )) s"
