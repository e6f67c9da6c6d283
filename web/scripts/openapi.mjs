// Writes web/openapi.json from the Python service (`python -m genservice.api.openapi`), the
// source the TypeScript client types are generated from. Uses the repository's .venv when there
// is one; keeps an existing openapi.json (with a warning) when Python cannot produce it.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const web = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const repo = resolve(web, "..");
const target = join(web, "openapi.json");
const venv = join(repo, ".venv", "bin", "python");
const python = process.env.GENSERVICE_PYTHON || (existsSync(venv) ? venv : "python3");

const run = spawnSync(python, ["-m", "genservice.api.openapi", target], {
  cwd: repo,
  stdio: ["ignore", "inherit", "inherit"],
});
if (run.status === 0) process.exit(0);
if (existsSync(target)) {
  console.warn(`openapi: ${python} -m genservice.api.openapi failed; keeping the existing openapi.json`);
  process.exit(0);
}
console.error(
  `openapi: could not write ${target}: run \`python -m genservice.api.openapi web/openapi.json\` ` +
    "from the repository root (or curl a running service's /openapi.json there)",
);
process.exit(1);
