// Vite build of the editor into web/dist (served by `genservice run` at /); `npm run dev`
// proxies the API to a service on 127.0.0.1:8765. Vitest runs the unit tests in src/**/*.test.ts.
import { defineConfig } from "vitest/config";

const api = process.env.GENSERVICE_API ?? "http://127.0.0.1:8765";

export default defineConfig({
  base: "/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    chunkSizeWarningLimit: 4000,
    sourcemap: false,
  },
  server: {
    proxy: { "/v1": api, "/healthz": api, "/openapi.json": api },
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
