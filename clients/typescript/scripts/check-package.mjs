// What `npm publish` would ship, checked as a user of the package meets it:
// a README (the npm page), every file the entry points and source maps
// name, the module format the README states being the one package.json
// declares, and the browser floor the README states being one the shipped
// code meets as it is. Prints the weight in an app, minified and gzipped.
// Run after `npm run build`.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

// The oldest browsers supported, in esbuild's names, as the README states
// them. The APIs newer than these that the client uses are optional (see
// src/signals.ts, src/uuid.ts, Web Locks); the browser tests run without them.
const FLOOR = { chrome: 91, edge: 91, firefox: 90, safari: 15, ios: 15 };
const FLOOR_TEXT = "Chrome and Edge 91, Firefox 90, Safari 15 (iOS 15)";

const [pack] = JSON.parse(execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { encoding: "utf8" }));
const shipped = new Set(pack.files.map((f) => f.path));
const pkg = JSON.parse(readFileSync("package.json", "utf8"));
const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
};

check(shipped.has("README.md"), "README.md is in the package");
for (const [path, conds] of Object.entries(pkg.exports)) {
  for (const [cond, target] of Object.entries(conds)) {
    check(shipped.has(normalize(target)), `exports["${path}"].${cond} (${target}) is in the package`);
  }
}

const maps = [...shipped].filter((f) => f.endsWith(".js.map"));
check(maps.length > 0, `${maps.length} source maps shipped`);
for (const map of maps) {
  const m = JSON.parse(readFileSync(map, "utf8"));
  check(shipped.has(join(dirname(map), m.file)), `${map}: its file ${m.file} is in the package`);
  m.sources.forEach((src, i) => {
    const inline = typeof m.sourcesContent?.[i] === "string" && m.sourcesContent[i].length > 0;
    check(
      inline || shipped.has(normalize(join(dirname(map), src))),
      `${map}: source ${src} resolves (${inline ? "inline" : "a shipped file"})`,
    );
  });
}

// ES modules only: package.json says so, nothing offers require, and the README says it.
const readme = readFileSync("README.md", "utf8");
check(
  pkg.type === "module" && !("require" in pkg.exports["."]) && !pkg.main?.endsWith(".cjs"),
  "package.json: ES modules, no CommonJS entry",
);
check(/ES modules only/.test(readme), "README states the module format: ES modules only");

// The syntax floor: esbuild, by its own tables of what each browser
// version supports, finds nothing in the shipped code to rewrite for the
// floor, and something one version below it.
const bundle = async (target, entry = "dist/index.js") => {
  try {
    const out = await build({
      entryPoints: [entry],
      external: ["react"],
      bundle: true,
      minify: true,
      format: "esm",
      target,
      write: false,
      logLevel: "silent",
    });
    return out.outputFiles[0].contents;
  } catch {
    return new Uint8Array();
  }
};
const asShipped = await bundle("esnext");
const floor = Object.entries(FLOOR).map(([b, v]) => `${b}${v}`);
check(Buffer.from(await bundle(floor)).equals(Buffer.from(asShipped)), `the shipped code runs as it is on ${floor.join(", ")}`);
for (const [b, v] of Object.entries(FLOOR)) {
  check(!Buffer.from(await bundle([`${b}${v - 1}`])).equals(Buffer.from(asShipped)), `but not on ${b}${v - 1}: the floor is the lowest`);
}
check(readme.includes(FLOOR_TEXT), `README states the floor: ${FLOOR_TEXT}`);
// The weight in an app, minified and gzipped, each entry point with what
// it imports of the package (react is the app's), under a bound: a new
// part that makes the client much heavier is a decision, not a drift.
const BOUNDS = { "dist/index.js": 14_000, "dist/react.js": 600, "dist/sqlite.js": 2_000, "dist/parts.js": 14_000 };
for (const [entry, bound] of Object.entries(BOUNDS)) {
  const min = await bundle("esnext", entry);
  const gz = gzipSync(min, { level: 9 }).length;
  console.log(`${entry} bundled and minified: ${min.length} bytes; gzipped: ${gz} bytes (bound ${bound})`);
  check(min.length > 0 && gz <= bound, `${entry}: ${gz} bytes gzipped, at most ${bound}`);
}

console.log(`${pack.filename}: ${pack.files.length} files, ${pack.size} bytes packed, ${pack.unpackedSize} unpacked`);
if (failures.length > 0) {
  console.error(`${failures.length} failed`);
  process.exit(1);
}
