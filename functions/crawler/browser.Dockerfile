# The browser crawler image (docs/spiders-browser.md): the crawler image's Node and sources plus a pinned Debian
# Chromium, for the browser fleet (cdk/constructs/browser-fleet.ts). Its tasks run functions/crawler/main.ts with
# CRAWLER_SPIDERS=browser: they lease only `browser` requests and render them in headless Chromium, driven by
# playwright-core (a production dependency; it downloads no browser). The HTML crawler image stays without Chromium.
# Chromium comes from Debian's security archive, pinned: when Debian ships a newer build the old one leaves the
# archive, so bump CHROMIUM_VERSION (`apt-cache policy chromium` in the base image) and the build stays repeatable.
# Build from the repository root:  docker build -f functions/crawler/browser.Dockerfile -t crawl-cluster-browser .

FROM node:26-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:26-bookworm-slim
ARG CHROMIUM_VERSION=156.0.8078.108-1~deb12u1
RUN apt-get update \
  && apt-get install -y --no-install-recommends "chromium=${CHROMIUM_VERSION}" "chromium-common=${CHROMIUM_VERSION}" \
     fonts-liberation \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
ENV CRAWLER_SPIDERS=browser
ENV BROWSER_CHROMIUM_PATH=/usr/bin/chromium
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY lib ./lib
COPY functions/crawler ./functions/crawler
COPY functions/shared ./functions/shared
USER node
# SIGTERM from ECS reaches node directly (exec form), which drains within SHUTDOWN_DEADLINE_MS and closes Chromium.
STOPSIGNAL SIGTERM
CMD ["node", "--max-semi-space-size=16", "functions/crawler/main.ts"]
