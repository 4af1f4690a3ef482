// Integration test: the JavaScript Azure Tables SDK (@azure/data-tables)
// against a running tabled.  Run by tests/integration/test_sdk_js.py, which
// starts the server and passes:
//   TABLED_CONN     the connection string the server printed
//   TABLED_JS_DEPS  the node_modules directory holding @azure/data-tables
// Prints TAP ("ok N - what" / "not ok N - what", plan at the end) and exits
// 1 when a check fails.
import { done, eq, ok, run, loadSdk } from "./tap.mjs";

const conn = process.env.TABLED_CONN;

// The service error code of an SDK error: RestError.code when the SDK set it,
// else the "odata.error" body it received (no x-ms-error-code on JSON errors).
function codeOf(err) {
  if (err && err.code && !/^[A-Z_]+$/.test(err.code)) return err.code;
  try {
    return JSON.parse(err.response.bodyAsText)["odata.error"].code;
  } catch (e) {
    return err && err.code;
  }
}

async function expectError(name, fn, status, code) {
  try {
    await fn();
    ok(false, name, "no error thrown");
  } catch (err) {
    eq([err.statusCode, codeOf(err)], [status, code], name);
  }
}

function strip(e) {
  // the user-visible properties of an entity, without etag/timestamp
  const out = {};
  for (const [k, v] of Object.entries(e)) {
    if (k !== "etag" && k !== "timestamp" && k !== "odata.metadata") out[k] = v;
  }
  return out;
}

async function main() {
  if (!conn) {
    ok(false, "TABLED_CONN is set");
    done();
  }
  const sdk = loadSdk();
  const { TableServiceClient, TableClient } = sdk;
  const opts = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
  const svc = TableServiceClient.fromConnectionString(conn, opts);
  const table = (name) => TableClient.fromConnectionString(conn, name, opts);

  const listNames = async () => {
    const names = [];
    for await (const t of svc.listTables()) names.push(t.name);
    return names;
  };

  await run("tables", async () => {
    eq(await listNames(), [], "listTables on a fresh server is empty");
    await svc.createTable("JsTable1");
    ok((await listNames()).includes("JsTable1"), "createTable; listTables shows it with its casing");
    let raw = null;
    await svc.createTable("jstable1", { onResponse: (r) => { raw = r; } });
    let code = null;
    try { code = JSON.parse(raw.bodyAsText)["odata.error"].code; } catch (e) { /* none */ }
    eq([raw && raw.status, code], [409, "TableAlreadyExists"],
       "createTable of an existing name (other case) answers 409 TableAlreadyExists (SDK ignores it)");
    await svc.createTable("JsTable2");
    eq((await listNames()).filter((x) => x.startsWith("JsTable")), ["JsTable1", "JsTable2"],
       "listTables sorted by name");
    await svc.deleteTable("JsTable2");
    ok(!(await listNames()).includes("JsTable2"), "deleteTable removes the table");
    raw = null;
    await svc.deleteTable("JsTable2", { onResponse: (r) => { raw = r; } });
    eq(raw && raw.status, 404, "deleteTable of a missing table answers 404 (SDK ignores it)");
  });

  await run("missing table", async () => {
    const tc = table("JsNoSuchTable");
    const ent = { partitionKey: "p", rowKey: "r", v: 1 };
    await expectError("createEntity in a missing table -> 404 TableNotFound",
                      () => tc.createEntity(ent), 404, "TableNotFound");
    await expectError("getEntity in a missing table -> 404 TableNotFound",
                      () => tc.getEntity("p", "r"), 404, "TableNotFound");
    await expectError("listEntities of a missing table -> 404 TableNotFound", async () => {
      for await (const e of tc.listEntities()) void e;
    }, 404, "TableNotFound");
    await expectError("upsertEntity in a missing table -> 404 TableNotFound",
                      () => tc.upsertEntity(ent, "Merge"), 404, "TableNotFound");
  });

  await run("entities", async () => {
    const tc = table("JsTable1");
    const ent = { partitionKey: "p1", rowKey: "r1", name: "alpha", qty: 3, keep: true };
    const created = await tc.createEntity(ent);
    ok(typeof created.etag === "string" && created.etag.startsWith("W/\"datetime'"),
       "createEntity returns an etag", created);
    await expectError("duplicate createEntity -> 409 EntityAlreadyExists",
                      () => tc.createEntity(ent), 409, "EntityAlreadyExists");
    let got = await tc.getEntity("p1", "r1");
    eq(strip(got), ent, "getEntity returns the stored properties");
    eq(got.etag, created.etag, "getEntity etag equals the create etag");
    ok(typeof got.timestamp === "string" && /Z$/.test(got.timestamp), "getEntity has a timestamp",
       got.timestamp);
    await expectError("getEntity of a missing entity -> 404 ResourceNotFound",
                      () => tc.getEntity("p1", "nope"), 404, "ResourceNotFound");

    await tc.updateEntity({ partitionKey: "p1", rowKey: "r1", name: "beta" }, "Replace",
                          { etag: got.etag });
    const afterReplace = await tc.getEntity("p1", "r1");
    eq(strip(afterReplace), { partitionKey: "p1", rowKey: "r1", name: "beta" },
       "updateEntity Replace with etag replaces");
    ok(afterReplace.etag !== got.etag, "the etag changes", afterReplace.etag);
    await expectError("updateEntity with a stale etag -> 412 UpdateConditionNotSatisfied",
                      () => tc.updateEntity({ partitionKey: "p1", rowKey: "r1", x: 1 }, "Replace",
                                            { etag: got.etag }), 412, "UpdateConditionNotSatisfied");
    await tc.updateEntity({ partitionKey: "p1", rowKey: "r1", qty: 7 }, "Merge",
                          { etag: afterReplace.etag });
    got = await tc.getEntity("p1", "r1");
    eq(strip(got), { partitionKey: "p1", rowKey: "r1", name: "beta", qty: 7 },
       "updateEntity Merge with etag merges");
    await expectError("updateEntity of a missing entity -> 404 ResourceNotFound",
                      () => tc.updateEntity({ partitionKey: "p1", rowKey: "ghost", a: 1 }, "Merge"),
                      404, "ResourceNotFound");

    await tc.upsertEntity({ partitionKey: "p2", rowKey: "m", a: 1, b: "b" }, "Merge");
    await tc.upsertEntity({ partitionKey: "p2", rowKey: "m", a: 2 }, "Merge");
    eq(strip(await tc.getEntity("p2", "m")), { partitionKey: "p2", rowKey: "m", a: 2, b: "b" },
       "upsertEntity Merge inserts, then merges");
    await tc.upsertEntity({ partitionKey: "p2", rowKey: "m", c: 3.5 }, "Replace");
    eq(strip(await tc.getEntity("p2", "m")), { partitionKey: "p2", rowKey: "m", c: 3.5 },
       "upsertEntity Replace replaces");

    await expectError("deleteEntity with a stale etag -> 412 UpdateConditionNotSatisfied",
                      () => tc.deleteEntity("p1", "r1", { etag: afterReplace.etag }), 412,
                      "UpdateConditionNotSatisfied");
    await tc.deleteEntity("p1", "r1", { etag: got.etag });
    await expectError("getEntity after deleteEntity -> 404 ResourceNotFound",
                      () => tc.getEntity("p1", "r1"), 404, "ResourceNotFound");
    let raw = null;
    await tc.deleteEntity("p1", "r1", { onResponse: (r) => { raw = r; } }).catch(() => {});
    eq(raw && raw.status, 404, "deleteEntity of a missing entity answers 404");

    const keys = [["b", "2"], ["a", "z"], ["B", "1"], ["a", "a"], ["O'Neil \"A\"", "r 1-\u00fc"]];
    for (const [pk, rk] of keys) await tc.createEntity({ partitionKey: pk, rowKey: rk });
    const listed = [];
    for await (const e of tc.listEntities()) listed.push([e.partitionKey, e.rowKey]);
    const want = [["B", "1"], ["O'Neil \"A\"", "r 1-\u00fc"], ["a", "a"], ["a", "z"], ["b", "2"],
                  ["p2", "m"]];
    eq(listed, want, "listEntities in PartitionKey, RowKey order");
    const q = await tc.getEntity("O'Neil \"A\"", "r 1-\u00fc");
    eq([q.partitionKey, q.rowKey], ["O'Neil \"A\"", "r 1-\u00fc"], "getEntity with quotes and spaces in keys");
  });

  await run("edm types", async () => {
    await svc.createTable("JsTypes");
    const tc = table("JsTypes");
    const guid = "4e2e8b0c-5bb7-4c3c-9f43-3a6f1d0b2c11";
    const when = new Date("2024-06-01T08:30:15.123Z");
    const bytes = new Uint8Array([0, 1, 2, 255]);
    const big = "\u00fc".repeat(32768);
    await tc.createEntity({
      partitionKey: "t", rowKey: "all",
      i64: BigInt("9007199254740993"), i64min: { value: "-9223372036854775808", type: "Int64" },
      i32: 42, neg: -2147483648, dbl: 12.5, dblInt: { value: "5", type: "Double" },
      nan: { value: "NaN", type: "Double" }, inf: { value: "Infinity", type: "Double" },
      when, guid: { value: guid, type: "Guid" }, bin: bytes, empty: new Uint8Array(0),
      yes: true, no: false, text: "gr\u00fc\u00df \u65e5\u672c \u{1F600}", blank: "", big,
    });
    const e = await tc.getEntity("t", "all");
    eq(typeof e.i64 === "bigint" ? e.i64.toString() : e.i64, "9007199254740993", "Int64 from BigInt round-trips");
    eq(typeof e.i64min === "bigint" ? e.i64min.toString() : e.i64min, "-9223372036854775808",
       "Int64 minimum round-trips");
    eq([e.i32, e.neg], [42, -2147483648], "Int32 values round-trip");
    eq([e.dbl, e.dblInt], [12.5, 5], "Double values round-trip");
    ok(String(e.nan) === "NaN" && String(e.inf) === "Infinity", "NaN and Infinity round-trip",
       [e.nan, e.inf]);
    ok(e.when instanceof Date && e.when.getTime() === when.getTime(), "DateTime round-trips as Date",
       e.when);
    eq(e.guid, { value: guid, type: "Guid" }, "Guid round-trips");
    ok(e.bin instanceof Uint8Array && Buffer.from(e.bin).equals(Buffer.from(bytes)),
       "Binary round-trips as Uint8Array", e.bin);
    ok(e.empty instanceof Uint8Array && e.empty.length === 0, "empty Binary round-trips", e.empty);
    eq([e.yes, e.no], [true, false], "Boolean values round-trip");
    eq([e.text, e.blank], ["gr\u00fc\u00df \u65e5\u672c \u{1F600}", ""], "strings round-trip");
    ok(e.big === big, "a 32,768-character string of two-byte characters round-trips",
       `length ${e.big && e.big.length}`);
    await svc.deleteTable("JsTypes");
  });

  await run("cleanup", async () => {
    await svc.deleteTable("JsTable1");
    eq(await listNames(), [], "all tables deleted");
  });
  done();
}

main().catch((err) => {
  ok(false, "test program crashed", `${err && err.stack ? err.stack : err}`);
  done();
});
