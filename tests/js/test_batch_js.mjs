// Integration test: entity group transactions ($batch, doc/protocol.md, Batch) through the
// JavaScript Azure Tables SDK (@azure/data-tables submitTransaction) against
// a running tabled.  Run by tests/integration/test_batch_js.py, which starts
// the server and passes:
//   TABLED_CONN     the connection string the server printed
//   TABLED_JS_DEPS  the node_modules directory holding @azure/data-tables
// After every failing transaction the table's raw contents (a signed
// fullmetadata query of every page, ETags and Timestamps included) must be
// byte-for-byte what they were before.  Prints TAP; exits 1 on a failure.
import { createHmac } from "node:crypto";
import { done, eq, ok, run, loadSdk } from "./tap.mjs";

const conn = process.env.TABLED_CONN;

// The service error code of an SDK error: RestError.code, else the
// "odata.error" body it received.
function codeOf(err) {
  if (err && err.code && !/^[A-Z_]+$/.test(err.code)) return err.code;
  try {
    return JSON.parse(err.response.bodyAsText)["odata.error"].code;
  } catch (e) {
    return err && err.code;
  }
}

// expectFail: fn must throw with that status, code and (when index is not
// null) a message starting with "index:".
async function expectFail(name, fn, status, code, index, message) {
  try {
    await fn();
    ok(false, name, "no error thrown");
    return null;
  } catch (err) {
    const msg = String(err && err.message);
    const got = [err.statusCode, codeOf(err)];
    const want = [status, code];
    if (index !== null) {
      got.push(msg.split("\n")[0]);
      want.push(message === undefined ? msg.split("\n")[0].replace(/^\d+:/, `${index}:`)
                                      : `${index}:${message}`);
      got.push(/^\d+:/.test(msg));
      want.push(true);
    }
    eq(got, want, name);
    return err;
  }
}
// ---- raw signed reads (doc/protocol.md, SharedKey) for byte-for-byte snapshots -------------

function parseConn(s) {
  const out = {};
  for (const part of s.split(";")) {
    const i = part.indexOf("=");
    if (i > 0) out[part.slice(0, i)] = part.slice(i + 1);
  }
  return out;
}

const cs = parseConn(conn || "");
const endpoint = (cs.TableEndpoint || "").replace(/\/$/, "");
const account = cs.AccountName;

// rawGet: a SharedKey-signed GET of path (relative to the endpoint).
async function rawGet(path, accept) {
  const url = new URL(endpoint + path);
  const date = new Date().toUTCString();
  const sts = ["GET", "", "", date, `/${account}${url.pathname}`].join("\n");
  const sig = createHmac("sha256", Buffer.from(cs.AccountKey, "base64")).update(sts, "utf8")
    .digest("base64");
  const res = await fetch(url, {
    headers: {
      "x-ms-date": date, "x-ms-version": "2019-02-02", Accept: accept,
      DataServiceVersion: "3.0", Authorization: `SharedKey ${account}:${sig}`,
    },
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

// snapshot: the raw fullmetadata bytes of the whole table, every page.
async function snapshot(table) {
  let out = "";
  let q = "";
  for (let i = 0; i < 1000; i++) {
    const r = await rawGet(`/${table}()${q}`, "application/json;odata=fullmetadata");
    if (r.status !== 200) throw new Error(`snapshot of ${table}: ${r.status} ${r.text}`);
    out += r.text;
    const npk = r.headers.get("x-ms-continuation-NextPartitionKey");
    const nrk = r.headers.get("x-ms-continuation-NextRowKey");
    if (!npk) return out;
    q = `?NextPartitionKey=${npk}${nrk ? `&NextRowKey=${nrk}` : ""}`;
  }
  throw new Error("snapshot: too many pages");
}

function strip(e) {
  const out = {};
  for (const [k, v] of Object.entries(e)) {
    if (k !== "etag" && k !== "timestamp" && k !== "odata.metadata" && k !== "partitionKey" &&
        k !== "rowKey") out[k] = v;
  }
  return out;
}

async function main() {
  if (!conn) {
    ok(false, "TABLED_CONN is set");
    done();
  }
  const sdk = loadSdk();
  const { TableServiceClient, TableClient, TableTransaction } = sdk;
  const opts = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
  const svc = TableServiceClient.fromConnectionString(conn, opts);
  const T = "JsBatch";
  const tc = TableClient.fromConnectionString(conn, T, opts);
  await svc.createTable(T);

  const contents = async (table) => {
    const out = {};
    for await (const e of TableClient.fromConnectionString(conn, table, opts).listEntities()) {
      out[e.rowKey] = strip(e);
    }
    return out;
  };
  const unchanged = async (what, before) => {
    const after = await snapshot(T);
    ok(after === before, `${what}: table contents byte-for-byte unchanged`,
       `before: ${before.slice(0, 600)}\nafter:  ${after.slice(0, 600)}`);
  };

  const etags = {};
  for (let i = 0; i < 60; i++) {
    const rk = `e${String(i).padStart(3, "0")}`;
    etags[i] = (await tc.createEntity({ partitionKey: "p", rowKey: rk, v: i })).etag;
  }
  const before = await snapshot(T);
  ok(before.includes("\"RowKey\":\"e059\""), "raw signed snapshot of the table works");

  // 100 mixed actions and the table they should leave
  const actions = [];
  const want = {};
  for (let i = 0; i < 100; i++) {
    const rk = `e${String(i).padStart(3, "0")}`;
    const k = i % 10;
    if (i >= 60) {
      const nk = `n${String(i).padStart(3, "0")}`;
      if (i % 3 === 0) actions.push(["create", { partitionKey: "p", rowKey: nk, n: i }]);
      else actions.push(["upsert", { partitionKey: "p", rowKey: nk, n: i },
                         i % 3 === 1 ? "Merge" : "Replace"]);
      want[nk] = { n: i };
    } else if (k === 0) {
      actions.push(["update", { partitionKey: "p", rowKey: rk, w: i }, "Merge", { etag: etags[i] }]);
      want[rk] = { v: i, w: i };
    } else if (k === 1) {
      actions.push(["update", { partitionKey: "p", rowKey: rk, w: i }, "Replace",
                    { etag: etags[i] }]);
      want[rk] = { w: i };
    } else if (k === 2) {
      actions.push(["update", { partitionKey: "p", rowKey: rk, w: i }, "Replace"]);
      want[rk] = { w: i };
    } else if (k === 3) {
      actions.push(["update", { partitionKey: "p", rowKey: rk, w: i }]);
      want[rk] = { v: i, w: i };
    } else if (k === 4) {
      actions.push(["delete", { partitionKey: "p", rowKey: rk }, { etag: etags[i] }]);
    } else if (k === 5) {
      actions.push(["delete", { partitionKey: "p", rowKey: rk }]);
    } else if (k === 6) {
      actions.push(["upsert", { partitionKey: "p", rowKey: rk, w: i }, "Replace"]);
      want[rk] = { w: i };
    } else if (k === 7) {
      actions.push(["upsert", { partitionKey: "p", rowKey: rk, w: i }, "Merge"]);
      want[rk] = { v: i, w: i };
    } else {
      want[rk] = { v: i };
      const uk = `u${String(i).padStart(3, "0")}`;
      actions.push(["upsert", { partitionKey: "p", rowKey: uk, u: i }]);
      want[uk] = { u: i };
    }
  }

  await run("failures leave the table unchanged", async () => {
    for (const idx of [0, 42, 99]) {
      const bad = actions.slice();
      bad[idx] = ["create", { partitionKey: "p", rowKey: `e${String(idx % 60).padStart(3, "0")}` }];
      await expectFail(`create of an existing entity at index ${idx} of 100 -> 409 "${idx}:"`,
                       () => tc.submitTransaction(bad), 409, "EntityAlreadyExists", idx,
                       "The specified entity already exists.");
      await unchanged(`failure at index ${idx}`, before);
    }
    let bad = actions.slice();
    bad[50] = ["update", { partitionKey: "p", rowKey: "e050", x: 1 }, "Merge",
               { etag: "W/\"datetime'2001-01-01T00%3A00%3A00Z'\"" }];
    await expectFail("ETag conflict at index 50 -> 412", () => tc.submitTransaction(bad), 412,
                     "UpdateConditionNotSatisfied", 50,
                     "The update condition specified in the request was not satisfied.");
    bad = actions.slice();
    bad[97] = ["update", { partitionKey: "p", rowKey: "ghost", x: 1 }, "Replace", { etag: "*" }];
    await expectFail("update of a missing entity at index 97 -> 404", () => tc.submitTransaction(bad),
                     404, "ResourceNotFound", 97, "The specified resource does not exist.");
    bad = actions.slice();
    bad[30] = ["upsert", { partitionKey: "p", rowKey: "e001", x: 1 }, "Merge"];
    await expectFail("a RowKey twice (index 1 and 30) -> 400 InvalidDuplicateRow",
                     () => tc.submitTransaction(bad), 400, "InvalidDuplicateRow", 30,
                     "The batch request contains multiple changes with same row key. An entity " +
                     "can appear only once in a batch request.");
    bad = actions.concat([["create", { partitionKey: "p", rowKey: "extra" }]]);
    await expectFail("101 actions -> 400 InvalidInput \"99:\"", () => tc.submitTransaction(bad),
                     400, "InvalidInput", 99,
                     "The batch request operation exceeds the maximum 100 changes per change set.");
    bad = [];
    for (let i = 0; i < 100; i++) {
      bad.push(["create", { partitionKey: "p", rowKey: `big${i}`, s: "s".repeat(21000),
                            t: "t".repeat(21000) }]);
    }
    await expectFail("a transaction body above 4 MiB -> 413 RequestBodyTooLarge",
                     () => tc.submitTransaction(bad), 413, "RequestBodyTooLarge", null);
    let threw = null;
    try {
      await tc.submitTransaction([["create", { partitionKey: "p", rowKey: "x1" }],
                                  ["create", { partitionKey: "q", rowKey: "x2" }]]);
    } catch (err) {
      threw = err;
    }
    ok(threw !== null, "two partitions are refused (the SDK checks this itself; raw HTTP covers " +
       "the server)", threw && threw.message);
    await unchanged("after every failing transaction", before);
    const missing = TableClient.fromConnectionString(conn, "JsBatchMissing", opts);
    await expectFail("transaction on a missing table -> 404 TableNotFound \"0:\"",
                     () => missing.submitTransaction([["create", { partitionKey: "p", rowKey: "r" }]]),
                     404, "TableNotFound", 0, "The table specified does not exist.");
  });

  await run("100 mixed actions", async () => {
    const res = await tc.submitTransaction(actions);
    eq(res.status, 202, "100 mixed actions -> 202");
    eq(res.subResponses.length, 100, "one sub-response per action");
    eq(res.subResponses.filter((s) => s.status === 204).length, 100, "every sub-response is 204");
    const tags = new Set(res.subResponses.filter((s) => s.etag).map((s) => s.etag.trim()));
    eq([tags.size, res.subResponses.filter((s) => s.etag).length], [1, 88],
       "every non-delete sub-response carries the batch's one ETag");
    const created = res.getResponseForEntity("n060");
    ok(created && created.status === 204 && created.etag, "getResponseForEntity finds an insert " +
       "by its Location", created);
    eq(await contents(T), want, "the table holds the expected entities after 100 mixed actions");
    const stamps = new Set();
    for await (const e of tc.listEntities()) {
      if (!(e.rowKey.startsWith("e") && [8, 9].includes(Number(e.rowKey.slice(1)) % 10))) {
        stamps.add(e.timestamp);
      }
    }
    eq(stamps.size, 1, "the written entities share one Timestamp");
    const etag = [...tags][0];
    const r2 = await tc.submitTransaction([["update", { partitionKey: "p", rowKey: "n060", z: 1 },
                                            "Merge", { etag }]]);
    ok(r2.status === 202 && r2.subResponses[0].status === 204 && r2.subResponses[0].etag !== etag,
       "the ETag from a transaction satisfies If-Match in the next", r2.subResponses);
  });

  await run("TableTransaction helper", async () => {
    const tx = new TableTransaction();
    tx.createEntity({ partitionKey: "h", rowKey: "a", v: 1 });
    tx.upsertEntity({ partitionKey: "h", rowKey: "b", v: 2 }, "Replace");
    tx.upsertEntity({ partitionKey: "h", rowKey: "c", v: 3 }, "Merge");
    const res = await tc.submitTransaction(tx.actions);
    eq(res.subResponses.map((s) => s.status), [204, 204, 204], "TableTransaction: insert and upserts");
    const tx2 = new TableTransaction();
    tx2.updateEntity({ partitionKey: "h", rowKey: "a", w: 9 }, "Merge");
    tx2.deleteEntity("h", "b");
    tx2.updateEntity({ partitionKey: "h", rowKey: "c", w: 8 }, "Replace");
    await tc.submitTransaction(tx2.actions);
    const got = {};
    for await (const e of tc.listEntities({ queryOptions: { filter: "PartitionKey eq 'h'" } })) {
      got[e.rowKey] = strip(e);
    }
    eq(got, { a: { v: 1, w: 9 }, c: { w: 8 } }, "TableTransaction: merge, delete, replace applied");
  });

  done();
}

main().catch((err) => {
  ok(false, "test program threw", `${err && err.stack ? err.stack : err}`);
  done();
});
