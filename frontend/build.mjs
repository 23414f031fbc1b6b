// Builds the browser bundles into static/: the agent as a classic script (window.anteroom) and
// as an ES module, the headless client as an ES module, and the hosted page's script. `node frontend/build.mjs [--sourcemap]`.
import { build } from "esbuild";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { version } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));

/** Settings every bundle shares (the tests build with them too). */
export const common = {
  absWorkingDir: root,
  bundle: true,
  minify: true,
  target: "es2020",
  platform: "browser",
  legalComments: "none",
  logLevel: "warning",
  banner: { js: `/*! anteroom ${version} */` },
};

export const bundles = [
  { entryPoints: ["frontend/index.js"], outfile: "static/anteroom.js", format: "iife", globalName: "anteroom" },
  { entryPoints: ["frontend/index.js"], outfile: "static/anteroom.mjs", format: "esm" },
  { entryPoints: ["frontend/hosted.js"], outfile: "static/hosted.js", format: "iife" },
  // The headless client (frontend/headless/) for React Native, Node, service workers: an ES
  // module built for no particular platform, so nothing browser-only is assumed.
  { entryPoints: ["frontend/headless/index.js"], outfile: "static/anteroom-headless.js", format: "esm", platform: "neutral" },
  // The fairness page's in-browser check of the draw and of a receipt (frontend/draw-check.js).
  { entryPoints: ["frontend/fairness-page.js"], outfile: "static/fairness.js", format: "iife" },
  // The operator console with uPlot; its CSS (uPlot's and ours) lands beside it as console.css.
  { entryPoints: ["frontend/console/index.js"], outfile: "static/console.js", format: "iife" },
  // The API reference at /docs: Swagger UI's bundle and CSS (swagger-ui-dist), with our few lines.
  { entryPoints: ["frontend/api-reference.js"], outfile: "static/api-reference.js", format: "iife",
    // Swagger UI is Apache-2.0: its licence notices travel with the bundle.
    legalComments: "eof" },
];

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const sourcemap = process.argv.includes("--sourcemap") ? "linked" : false;
  for (const bundle of bundles) {
    await build({ ...common, ...bundle, sourcemap });
    const code = await readFile(path.join(root, bundle.outfile));
    const size = `${String(code.length).padStart(6)} B, ${String(gzipSync(code).length).padStart(5)} B gzip`;
    console.log(`${bundle.outfile.padEnd(20)} ${size}`);
  }
}
