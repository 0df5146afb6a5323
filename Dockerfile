# syntax=docker/dockerfile:1
# keygate: one image for both programs. The default command runs the gateway; run the backend with
# `node dist/cli.js backend` (see deploy/README.md). Build: docker build -t keygate:0.1.0 .

# ---- build: compile TypeScript to dist/ -------------------------------------------------------
FROM node:22-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# Envoy's gRPC external authorization's .proto files: `npm run build` copies them into dist/proto/.
COPY proto ./proto
RUN npm run build

# ---- runtime: production dependencies, compiled JavaScript, SQL migrations, data files ---------
FROM node:22-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app

COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY --from=build /app/dist ./dist
# src/db/index.ts finds its migrations at new URL('./migrations/', import.meta.url): next to the
# compiled module, dist/db/migrations/. `npm run build` copies them there (tsc does not copy .sql
# files), so dist/ above already holds them; this COPY of the same files keeps the layout explicit.
COPY src/db/migrations/ ./dist/db/migrations/
# The data files (PLANS_FILE, ROUTES_FILE, WARMUP_BANDS_FILE default to config/*.json relative to
# the working directory) and the demo seed; the profiles (PROFILE_FILE, profiles/workspace.yaml).
COPY config/ ./config/
COPY profiles/ ./profiles/
COPY deploy/healthcheck.mjs ./deploy/healthcheck.mjs

# The code stays root-owned and read-only to the process. The only writable place is .data/, the
# PGlite directory of the all-in-one demo (`node dist/cli.js start`); with DATABASE_URL it is unused.
RUN mkdir -p /app/.data && chown 1000:1000 /app/.data

# The `node` user of the official image, given numerically so Kubernetes' runAsNonRoot can verify it.
USER 1000:1000

# PORT (gateway), BACKEND_PORT (backend), ADMIN_PORT (/healthz, /readyz, /metrics).
EXPOSE 8080 8081 9090

# The operations port and the admin API bind loopback unless opened; in a container, loopback is
# unreachable from a published port or a probe, and the container's network is already its own.
ENV ADMIN_HOST=0.0.0.0 ADMIN_API_HOST=0.0.0.0

# gateway: GET http://127.0.0.1:${ADMIN_PORT}/healthz; backend: any HTTP answer on BACKEND_PORT.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "deploy/healthcheck.mjs"]

# Not `npm start` (tsx, a dev dependency): the compiled entry. SIGTERM reaches node directly and
# starts the drain (CONTRACT section 8). Key management runs the same entry:
#   docker run --rm -e DATABASE_URL -e REDIS_URL keygate:0.1.0 node dist/cli.js keys create ...
CMD ["node", "dist/cli.js", "gateway"]
