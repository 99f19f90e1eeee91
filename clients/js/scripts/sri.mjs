// Print the Subresource Integrity hash of src/distort.js:  node clients/js/scripts/sri.mjs
// Paste it into both READMEs after every change (test/package.test.mjs checks them).
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

const file = new URL("../src/distort.js", import.meta.url);
console.log(`sha384-${createHash("sha384").update(readFileSync(file)).digest("base64")}`);
