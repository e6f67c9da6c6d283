// Validate GLB/glTF files with the Khronos glTF validator and print one JSON report per file.
// Usage: node validate.mjs [--override CODE=SEVERITY ...] FILE...
// Severity numbers are the validator's: 0 error, 1 warning, 2 info, 3 hint.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import validator from "gltf-validator";

const args = process.argv.slice(2);
const severityOverrides = {};
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--override") {
    const [code, severity] = args[++i].split("=");
    severityOverrides[code] = Number(severity);
  } else {
    files.push(args[i]);
  }
}

const reports = [];
for (const file of files) {
  const bytes = new Uint8Array(readFileSync(file));
  try {
    const report = await validator.validateBytes(bytes, {
      uri: basename(file),
      maxIssues: 200,
      severityOverrides,
      externalResourceFunction: () => Promise.reject(new Error("external resources are not allowed")),
    });
    reports.push({ file, report });
  } catch (error) {
    reports.push({ file, failure: String(error) });
  }
}
process.stdout.write(JSON.stringify(reports) + "\n");
