// TAP output for the JavaScript SDK integration tests (tests/js/test_*.mjs):
// "ok N - what" / "not ok N - what" with "# " diagnostic lines after a
// failure, the plan "1..N" at the end, exit status 1 when a check failed or
// none ran.  Needs nothing but node; loadSdk() finds @azure/data-tables.
//   import { ok, eq, safeJson, run, done, loadSdk } from "./tap.mjs";
import { createRequire } from "node:module";
import { join } from "node:path";

let n = 0;
let failed = 0;

// Characters of one value shown in a diagnostic (comparisons use all of it).
const SHOW = 3000;

// canonJson: JSON text with object keys sorted (property order is not part
// of what the SDK promises), BigInts written as "123n" and Uint8Arrays as
// arrays of bytes; String(v) for what JSON cannot write.
function canonJson(v) {
  const canon = (x) => {
    if (typeof x === "bigint") return `${x}n`;
    if (x instanceof Uint8Array) return Array.from(x);
    if (Array.isArray(x)) return x.map(canon);
    if (x && typeof x === "object" && !(x instanceof Date)) {
      const out = {};
      for (const k of Object.keys(x).sort()) out[k] = canon(x[k]);
      return out;
    }
    return x;
  };
  try {
    const text = JSON.stringify(canon(v));
    return text === undefined ? String(v) : text;
  } catch (e) {
    return String(v);
  }
}

// safeJson: canonJson cut to a length fit for a diagnostic.
export function safeJson(v) {
  return canonJson(v).slice(0, SHOW);
}

// ok: one TAP line; diag (shown on failure) may be any value.
export function ok(cond, name, diag) {
  n += 1;
  const line = `${cond ? "ok" : "not ok"} ${n} - ${String(name).replace(/\s+/g, " ").replace(/#/g, "\\#")}`;
  console.log(line);
  if (!cond) {
    failed += 1;
    if (diag !== undefined) {
      const text = typeof diag === "string" ? diag : safeJson(diag);
      for (const l of text.split("\n")) console.log(`# ${l}`);
    }
  }
  return cond;
}

// eq: got and want have the same canonical JSON text.
export function eq(got, want, name) {
  const g = canonJson(got);
  const w = canonJson(want);
  return ok(g === w, name, `got:  ${g.slice(0, SHOW)}\nwant: ${w.slice(0, SHOW)}`);
}

// run: one test group; an exception becomes one failing line.
export async function run(name, fn) {
  try {
    await fn();
  } catch (err) {
    ok(false, `${name} threw`, `${err && err.stack ? err.stack : err}`);
  }
}

// done: the plan line, then exit (1 when a check failed or none ran).
export function done() {
  console.log(`1..${n}`);
  process.exit(failed || n === 0 ? 1 : 0);
}

// loadSdk: @azure/data-tables from $TABLED_JS_DEPS (where the wrappers
// install it), reported as one check; the run ends when it cannot load.
export function loadSdk() {
  const require = createRequire(join(process.env.TABLED_JS_DEPS || process.cwd(), "noop.js"));
  try {
    const sdk = require("@azure/data-tables");
    ok(true, "load @azure/data-tables");
    return sdk;
  } catch (err) {
    ok(false, "load @azure/data-tables", String(err));
    return done();
  }
}
