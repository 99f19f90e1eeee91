// Tests of the npm package around distort.js: version, types, README embed.
//   node --test clients/js/test/      (part of `make test`)
// The statistical tests of the sampler are in tests/js/ and tests/browser/.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import * as distort from "../src/distort.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const PACKAGE = join(HERE, "..");
const REPO = join(PACKAGE, "..", "..");
const pkg = JSON.parse(readFileSync(join(PACKAGE, "package.json"), "utf8"));
const source = readFileSync(join(PACKAGE, "src", "distort.js"));
const types = readFileSync(join(PACKAGE, "src", "distort.d.ts"), "utf8");

// Semantic Versioning 2.0.0, section 2 and the suggested regular expression.
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

function integrity() {
  return `sha384-${createHash("sha384").update(source).digest("base64")}`;
}

test("package.json has a semantic version equal to the module's VERSION", () => {
  assert.match(pkg.version, SEMVER);
  assert.equal(distort.VERSION, pkg.version);
});

test("package.json points at files that exist, and ships the types", () => {
  for (const file of pkg.files) assert.ok(existsSync(join(PACKAGE, file)), `${file} listed in "files" is missing`);
  assert.equal(pkg.types, "./src/distort.d.ts");
  assert.equal(pkg.exports["."].default, pkg.main);
  assert.equal(pkg.type, "module");
});

test("the .d.ts declares exactly the module's exports", () => {
  const declared = new Set([...types.matchAll(/^export declare (?:function|const) (\w+)/gm)].map((m) => m[1]));
  const exported = new Set(Object.keys(distort));
  assert.deepEqual([...exported].filter((name) => !declared.has(name)), [], "exported but not typed");
  assert.deepEqual([...declared].filter((name) => !exported.has(name)), [], "typed but not exported");
  for (const name of exported) {
    const kind = typeof distort[name] === "function" ? "function" : "const";
    assert.match(types, new RegExp(`export declare ${kind} ${name}\\b`), `${name} should be declared as a ${kind}`);
  }
});

for (const readme of [join(PACKAGE, "README.md"), join(REPO, "docs", "portal", "client-kit.md")]) {
  test(`${readme.slice(REPO.length + 1)} embeds the pinned version with the file's SRI hash`, () => {
    const text = readFileSync(readme, "utf8");
    const expected = integrity();
    const hashes = [...text.matchAll(/sha384-[A-Za-z0-9+/=]+/g)].map((m) => m[0]);
    assert.ok(hashes.length > 0, "no integrity hash in the README");
    for (const hash of hashes) assert.equal(hash, expected, `stale integrity hash; distort.js now hashes to ${expected}`);
    const pins = [...text.matchAll(/@consultations\/distort@([^/\s"'`]+)/g)].map((m) => m[1]);
    assert.ok(pins.length > 0, "no pinned version in the README");
    for (const pin of pins) assert.equal(pin, pkg.version, "the README pins another version than package.json");
  });
}

const SEX = {
  key: "sex",
  type: "binary",
  text: "Sex",
  categories: ["F", "M"],
  mechanism: { name: "none" },
  translations: {
    de: { text: "Geschlecht", labels: ["weiblich", "männlich"] },
    pl: { text: "Płeć", labels: ["kobieta", "mężczyzna"] },
  },
};

test("pickLanguage matches exactly, then on the primary subtag, in the resident's order", () => {
  assert.equal(distort.pickLanguage(SEX, ["fr", "de-AT", "pl"]), "de");
  assert.equal(distort.pickLanguage(SEX, "PL"), "pl");
  assert.equal(distort.pickLanguage(SEX, ["fr", "en-GB"]), null);
  assert.equal(distort.pickLanguage({ ...SEX, translations: undefined }, ["de"]), null);
});

test("localiseQuestion shows the resident's language but keeps the wire values", () => {
  const shown = distort.localiseQuestion(SEX, ["de-DE"]);
  assert.equal(shown.language, "de");
  assert.equal(shown.text, "Geschlecht");
  assert.deepEqual(shown.options, [
    { value: "F", label: "weiblich" },
    { value: "M", label: "männlich" },
  ]);
  // The value chosen from the localised options is what distortAnswers accepts.
  const sent = distort.distortAnswers({ survey: 1, questions: [SEX] }, { sex: shown.options[1].value });
  assert.deepEqual(sent, { sex: "M" });
});

test("localiseQuestion falls back to the question's own text and categories", () => {
  const shown = distort.localiseQuestion(SEX, ["fr"]);
  assert.equal(shown.language, null);
  assert.equal(shown.text, "Sex");
  assert.deepEqual(shown.options.map((o) => o.label), ["F", "M"]);
  // A translation whose labels do not cover every category is not used for labels.
  const broken = { ...SEX, translations: { de: { text: "Geschlecht", labels: ["weiblich"] } } };
  assert.deepEqual(distort.localiseQuestion(broken, "de").options.map((o) => o.label), ["F", "M"]);
  const age = { key: "age", type: "continuous", range: [16, 100], mechanism: { name: "none" } };
  assert.deepEqual(distort.localiseQuestion(age, "de"), { language: null, text: "age", options: [] });
});
