# The tenantkit image: Node 24 runs the JavaScript that tsc compiles from src/ (`npm run build`). Running the
# .ts sources would load Node's TypeScript stripper into every process (17 MiB per Pod). Without Docker,
# `npm run images` builds the same image from these steps (devenv/images/build.ts). The build step
# installs the dev dependencies without their install scripts (only tsc and @types/node are used), then
# keeps the runtime dependencies and dist/ alone; optional packages are left out: they are
# embedded-postgres' binaries for `tenantkit dev` and a Cloudflare driver of pg.
FROM node:24-slim
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm ci --omit=optional --ignore-scripts --no-audit --no-fund && \
    npm run build && \
    npm prune --omit=dev --omit=optional --no-audit --no-fund && \
    rm -rf src tsconfig.json tsconfig.build.json
COPY bin ./bin
USER 65532:65532
ENTRYPOINT ["node", "dist/src/cli/main.js"]
