// Fails when src/schema.ts is not what openapi-typescript makes of the
// OpenAPI document today: the client's types must follow the contract.
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";

const doc = new URL("../../../openapi/openapi.yaml", import.meta.url);
const committed = await readFile(fileURLToPath(new URL("../src/schema.ts", import.meta.url)), "utf8");
const generated = astToString(await openapiTS(doc));
const strip = (s) => s.replace(/^\/\*\*[\s\S]*?\*\/\s*/, "").trim(); // the CLI's banner comment
if (strip(committed) !== strip(generated)) {
  console.error("src/schema.ts is stale: run `npm run generate` and commit it");
  process.exit(1);
}
console.log("src/schema.ts matches openapi/openapi.yaml");
