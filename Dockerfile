# One image for every service; SERVICES picks what a container runs.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
ENV NODE_ENV=production SERVICEDIR=dist/services
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/public ./public
COPY package.json ./
# DATA_DIR (.data) belongs to the user the service runs as; a volume mounted on .data/assets starts with this owner.
RUN mkdir -p /app/.data/assets && chown -R node:node /app/.data
USER node
EXPOSE 3000
CMD ["npx", "moleculer-runner", "--config", "dist/moleculer.config.js"]
