// Integration test: paging of Query Entities and Query Tables with the
// JavaScript Azure Tables SDK (@azure/data-tables): listEntities / byPage
// with maxPageSize, filters built with odata``, select, continuation tokens,
// and pages cut by a scan budget (empty pages included).  Run by
// tests/integration/test_queries_js.py, which starts two servers and passes:
//   TABLED_CONN         connection string of a normal server
//   TABLED_CONN_BUDGET  connection string of a server with --scan-budget
//   TABLED_BUDGET       that budget (entities examined per page)
//   TABLED_JS_DEPS      the node_modules directory holding @azure/data-tables
// Prints TAP and exits 1 when a check fails.
import { done, eq, ok, run, loadSdk } from "./tap.mjs";

const conn = process.env.TABLED_CONN;
const connBudget = process.env.TABLED_CONN_BUDGET;
const budget = Number(process.env.TABLED_BUDGET || "0");

// The service's continuation token for key (doc/protocol.md, Continuation).
function tok(key) {
  const b = Buffer.from(key, "utf8").toString("base64").replace(/=/g, "-");
  return `1!${b.length}!${b}`;
}

// The 2,500 entities: 5 partitions x 500 rows, Idx 0..2499, Mod = Idx % 250.
function entities() {
  const out = [];
  for (let p = 0; p < 5; p++) {
    for (let r = 0; r < 500; r++) {
      const i = p * 500 + r;
      out.push({ partitionKey: `P${p}`, rowKey: `r${String(r).padStart(4, "0")}`, Idx: i, Mod: i % 250 });
    }
  }
  return out;
}

async function load(tc, ents) {
  await tc.createTable();
  for (let k = 0; k < ents.length; k += 100) {
    await tc.submitTransaction(ents.slice(k, k + 100).map((e) => ["create", e]));
  }
}

// Every page of an iterator's byPage(settings): [[keys...], ...] and tokens.
async function pagesOf(iter, settings) {
  const pages = [];
  const tokens = [];
  for await (const page of iter.byPage(settings)) {
    pages.push(page.map((e) => `${e.partitionKey}/${e.rowKey}`));
    tokens.push(page.continuationToken);
  }
  return { pages, tokens };
}

const keyOf = (e) => `${e.partitionKey}/${e.rowKey}`;
const sizes = (pages) => pages.map((p) => p.length);

// The server's page algorithm (doc/protocol.md, Continuation) over ents: page sizes.
function expectedSizes(ents, pred, limit, scanBudget) {
  const out = [];
  let start = 0;
  for (;;) {
    let items = 0;
    let examined = 0;
    let next = null;
    for (let i = start; i < ents.length; i++) {
      if (scanBudget && examined >= scanBudget) { next = i; break; }
      examined++;
      if (!pred(ents[i])) continue;
      if (items === limit) { next = i; break; }
      items++;
    }
    out.push(items);
    if (next === null || out.length > 10000) return out;
    start = next;
  }
}

async function main() {
  const sdk = loadSdk();
  const { TableClient, TableServiceClient, odata } = sdk;
  const opts = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
  const ents = entities();
  const all = ents.map(keyOf);

  await run("paging", async () => {
    const tc = TableClient.fromConnectionString(conn, "jspaged", opts);
    await load(tc, ents);
    let r = await pagesOf(tc.listEntities());
    eq(sizes(r.pages), [1000, 1000, 500], "listEntities().byPage(): 1000, 1000, 500");
    eq(r.pages.flat(), all, "byPage returns each of 2,500 exactly once, in order");
    const listed = [];
    for await (const e of tc.listEntities()) listed.push(keyOf(e));
    eq(listed, all, "listEntities() iterates all 2,500 in order");

    r = await pagesOf(tc.listEntities(), { maxPageSize: 300 });
    eq(sizes(r.pages), [300, 300, 300, 300, 300, 300, 300, 300, 100], "byPage({maxPageSize: 300})");
    eq(r.pages.flat(), all, "maxPageSize 300 pages cover all in order");
    eq(r.tokens[r.tokens.length - 1], undefined, "the last page has no continuationToken");

    const mod = tc.listEntities({ queryOptions: { filter: odata`Mod lt ${50}` } });
    r = await pagesOf(mod, { maxPageSize: 120 });
    eq(sizes(r.pages), [120, 120, 120, 120, 20], "filter Mod lt 50, maxPageSize 120: page sizes");
    eq(r.pages.flat(), ents.filter((e) => e.Mod < 50).map(keyOf), "... the 500 matches once, in order");

    const part = tc.listEntities({
      queryOptions: { filter: odata`PartitionKey eq ${"P3"} or PartitionKey eq ${"P1"}`, select: ["Idx"] },
    });
    const idx = [];
    for await (const page of part.byPage({ maxPageSize: 333 })) idx.push(page.map((e) => e.Idx));
    eq(sizes(idx), [333, 333, 333, 1], "two partitions, select Idx, maxPageSize 333: page sizes");
    eq(idx.flat(), [...Array(500).keys()].map((i) => i + 500).concat([...Array(500).keys()].map((i) => i + 1500)),
      "two partitions: Idx values in key order (P1 then P3)");

    // resume from a page's continuation token
    const it = tc.listEntities().byPage({ maxPageSize: 700 });
    const first = (await it.next()).value;
    const token = first.continuationToken;
    let decoded = null;
    try { decoded = JSON.parse(Buffer.from(token, "base64").toString("utf8")); } catch (e) { /* opaque */ }
    eq(decoded, { nextPartitionKey: tok("P1"), nextRowKey: tok("r0200") },
      "the SDK's continuationToken carries the service's tokens for P1/r0200");
    r = await pagesOf(tc.listEntities(), { maxPageSize: 700, continuationToken: token });
    eq(sizes(r.pages), [700, 700, 400], "byPage({continuationToken}) pages 700, 700, 400");
    eq(first.map(keyOf).concat(r.pages.flat()), all, "byPage({continuationToken}) continues exactly there");
  });

  await run("tables", async () => {
    const svc = TableServiceClient.fromConnectionString(conn, opts);
    for (const t of ["jsAlpha", "jsbeta", "JsGamma", "jsdelta"]) await svc.createTable(t);
    const names = [];
    for await (const t of svc.listTables()) names.push(t.name);
    const want = ["jsAlpha", "jsbeta", "jsdelta", "JsGamma", "jspaged"];
    eq(names, want, "listTables sorted by name (case-insensitive order)");
    const pages = [];
    for await (const page of svc.listTables().byPage({ maxPageSize: 2 })) pages.push(page.map((t) => t.name));
    eq(pages, [want.slice(0, 2), want.slice(2, 4), want.slice(4)], "listTables().byPage({maxPageSize: 2})");
    const filtered = [];
    const q = svc.listTables({ queryOptions: { filter: odata`TableName ge ${"js"} and TableName lt ${"jt"}` } });
    for await (const page of q.byPage({ maxPageSize: 1 })) filtered.push(page.map((t) => t.name));
    eq(filtered, [["jsAlpha"], ["jsbeta"], ["jsdelta"], ["jspaged"]],
      "listTables with a TableName prefix filter, maxPageSize 1 (case-sensitive)");
  });

  await run("budget", async () => {
    if (!connBudget || !budget) {
      ok(false, "TABLED_CONN_BUDGET and TABLED_BUDGET are set");
      return;
    }
    const tc = TableClient.fromConnectionString(connBudget, "jsbudget", opts);
    await load(tc, ents);
    let r = await pagesOf(tc.listEntities());
    eq(sizes(r.pages), expectedSizes(ents, () => true, 1000, budget),
      `scan budget ${budget}: pages cut at ${budget} entities examined`);
    eq(r.pages.flat(), all, "scan budget: each entity once, in order");
    const m0 = tc.listEntities({ queryOptions: { filter: odata`Mod eq ${0}` } });
    r = await pagesOf(m0);
    const want = expectedSizes(ents, (e) => e.Mod === 0, 1000, budget);
    eq(sizes(r.pages), want, "scan budget, Mod eq 0: page sizes including empty pages");
    ok(want.slice(0, -1).includes(0), "... some pages before the last are empty", want);
    eq(r.pages.flat(), ents.filter((e) => e.Mod === 0).map(keyOf), "... the 10 matches once, in order");
    r = await pagesOf(m0, { maxPageSize: 1 });
    eq(r.pages.flat(), ents.filter((e) => e.Mod === 0).map(keyOf), "scan budget, Mod eq 0, maxPageSize 1: all matches");
  });

  done();
}

main();
