# The tenantkit image: Node 24 runs the TypeScript sources directly (type stripping), no build step.
FROM node:24-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY bin ./bin
COPY src ./src
USER 65532:65532
ENTRYPOINT ["node", "src/cli/main.ts"]
