// The package as an app gets it by the README's steps, from a clean
// checkout: this directory's files as git has them (tracked, or new and
// not ignored; so no dist/ and no build/) copied to a temporary
// directory, `npm pack` there (its prepack builds dist/), the tarball
// installed into a scratch app, and every subpath of package.json's
// exports imported by Node.js and resolved by TypeScript, as the app
// would. Offline: the tarball has no dependencies, and the optional peer
// react, which /react imports, is this checkout's node_modules/react,
// installed without saving. Run with `npm run package:install` (and by
// `npm run package`).
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

const here = resolve(import.meta.dirname, "..");
const pkg = JSON.parse(readFileSync(join(here, "package.json"), "utf8"));
const tmp = mkdtempSync(join(tmpdir(), "sync-events-install-"));
const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
};
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const quiet = ["--offline", "--no-audit", "--no-fund", "--loglevel=error"];

try {
  // A clean checkout: no dist/ for npm pack to find unless prepack builds it.
  const checkout = join(tmp, "checkout");
  const files = run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "."], here)
    .split("\0")
    .filter((f) => f !== "" && !f.startsWith("dist/") && !f.startsWith("build/"));
  for (const f of files) {
    mkdirSync(dirname(join(checkout, f)), { recursive: true });
    try {
      copyFileSync(join(here, f), join(checkout, f));
    } catch (err) {
      if (err.code !== "ENOENT") throw err; // tracked, but deleted in the work tree
    }
  }
  symlinkSync(join(here, "node_modules"), join(checkout, "node_modules"), "dir"); // the build's tools, as npm ci installs them
  run("npm", ["pack", "--pack-destination", tmp, "--loglevel=error"], checkout);
  const tarballs = readdirSync(tmp).filter((f) => f.endsWith(".tgz"));
  check(tarballs.length === 1, `npm pack from a clean checkout made one tarball: ${tarballs.join(", ")}`);
  const tarball = join(tmp, tarballs[0] ?? "none.tgz");
  const listing = run("tar", ["-tzf", tarball], tmp).split("\n").filter(Boolean);
  check(listing.includes("package/dist/index.js"), `the tarball holds dist/ (${listing.length} files)`);

  // The app: installs the tarball as the README says, and react for /react.
  const app = join(tmp, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "scratch-app", private: true, type: "module" }));
  run("npm", ["install", ...quiet, tarball], app);
  run("npm", ["install", ...quiet, "--no-save", join(here, "node_modules", "react")], app);
  const installed = JSON.parse(readFileSync(join(app, "node_modules", pkg.name, "package.json"), "utf8"));
  check(installed.version === pkg.version, `${pkg.name}@${installed.version} installed in the app`);

  // Every subpath, imported by Node.js: each has exports, none undefined.
  const specifiers = Object.keys(pkg.exports).map((p) => (p === "." ? pkg.name : `${pkg.name}/${p.replace(/^\.\//, "")}`));
  writeFileSync(
    join(app, "imports.mjs"),
    `const out = {};\nfor (const s of ${JSON.stringify(specifiers)}) {\n  const m = await import(s);\n  out[s] = Object.entries(m).map(([k, v]) => (v === undefined ? k + ": undefined" : k));\n}\nconsole.log(JSON.stringify(out));\n`,
  );
  let imported = {};
  try {
    imported = JSON.parse(run("node", ["imports.mjs"], app));
  } catch (err) {
    check(false, `node imports every subpath: ${err.stderr || err.message}`);
  }
  for (const s of specifiers) {
    const names = imported[s] ?? [];
    check(
      names.length > 0 && !names.some((n) => n.endsWith(": undefined")),
      `import "${s}": ${names.length} exports (${names.join(", ")})`,
    );
  }

  // The record model, used as the README shows, offline (no server): shown at once.
  writeFileSync(
    join(app, "records.mjs"),
    `import { createSyncClient } from "${pkg.name}";
const client = createSyncClient({ baseUrl: "http://127.0.0.1:9", user: "u", getToken: () => "x.eyJzdWIiOiJ1In0.x", online: () => false });
const todos = client.records("todo");
const milk = await todos.add({ title: "milk", done: false });
const bread = await todos.add({ title: "bread", done: false });
await todos.patch(milk, { done: true });
await todos.delete(bread);
console.log(JSON.stringify(todos.list().map((t) => [t.fields.title, t.fields.done, t.pending])));
client.close();
`,
  );
  let shown = "";
  try {
    shown = run("node", ["records.mjs"], app).trim();
  } catch (err) {
    shown = err.stderr || err.message;
  }
  check(shown === '[["milk",true,true]]', `the app's records: add, patch, delete shown at once offline: ${shown}`);

  // And by TypeScript, as an app of NodeNext resolution: each subpath's types found.
  const typed = `import { createSyncClient } from "${pkg.name}";
import { useRecords } from "${pkg.name}/react";
type Todo = { title: string; done: boolean };
export const titles = (c: ReturnType<typeof createSyncClient>): string[] => c.records<Todo>("todo").list().map((t) => t.fields.title);
export const hook = (c: ReturnType<typeof createSyncClient>): readonly { id: string }[] => useRecords<Todo>(c, "todo");
`;
  writeFileSync(join(app, "types.ts"), specifiers.map((s, i) => `import * as m${i} from "${s}";\nexport { m${i} };\n`).join("") + typed);
  const compilerOptions = { noEmit: true, strict: true, skipLibCheck: true, module: "nodenext", moduleResolution: "nodenext", types: [] };
  writeFileSync(join(app, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["types.ts"] }));
  try {
    run("node", [join(here, "node_modules", "typescript", "bin", "tsc"), "-p", "."], app);
    check(true, `tsc resolves the types of ${specifiers.join(", ")}`);
  } catch (err) {
    check(false, `tsc resolves the types of every subpath: ${err.stdout || err.message}`);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

if (failures.length > 0) {
  console.error(`${failures.length} failed`);
  process.exit(1);
}
