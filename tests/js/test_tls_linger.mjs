// Node's https client uploads a body of 8 MiB (Content-Length, no Expect)
// to tabled's HTTPS port, as the SDKs send one, TABLED_ROUNDS times in a
// row: every upload must end with 413 RequestBodyTooLarge and its error
// body, never ECONNRESET. Run by tests/integration/test_tls_linger.py with
// TABLED_TLS_PORT, TABLED_TLS_CA (the server's self-signed certificate) and
// TABLED_ROUNDS in the environment. Needs nothing but node.
import https from "node:https";
import { readFileSync } from "node:fs";
import { ok, done } from "./tap.mjs";

const port = Number(process.env.TABLED_TLS_PORT);
const ca = readFileSync(process.env.TABLED_TLS_CA);
const rounds = Number(process.env.TABLED_ROUNDS || "5");
const body = Buffer.alloc(8 * 1024 * 1024, "x");

// One upload on a fresh connection: resolves to "413 RequestBodyTooLarge"
// (status and error code), or to the error's code.
function upload() {
  return new Promise((resolve) => {
    const req = https.request({
      host: "127.0.0.1", port, method: "POST", path: "/devstoreaccount1/Tables", ca,
      agent: false,
      headers: {
        "Content-Type": "application/json",
        "Content-Length": body.length,
        "x-ms-version": "2019-02-02",
        Accept: "application/json;odata=nometadata",
      },
    });
    let settled = false;
    const finish = (v) => { if (!settled) { settled = true; resolve(v); } };
    req.on("response", (res) => {
      const parts = [];
      res.on("data", (d) => parts.push(d));
      res.on("end", () => {
        let code = "";
        try {
          code = JSON.parse(Buffer.concat(parts).toString("utf8"))["odata.error"].code;
        } catch (e) {
          code = `unparsable body (${e.message})`;
        }
        finish(`${res.statusCode} ${code}`);
      });
      res.on("error", (e) => finish(e.code || e.message));
    });
    req.on("error", (e) => finish(e.code || e.message));
    req.setTimeout(60000, () => { req.destroy(new Error("timeout")); });
    req.end(body);
  });
}

const results = [];
for (let i = 0; i < rounds; i++) results.push(await upload());
const good = results.filter((r) => r === "413 RequestBodyTooLarge").length;
ok(good === rounds,
   `node https: ${good} of ${rounds} uploads of 8 MiB got 413 RequestBodyTooLarge`, results);
ok(results.every((r) => r !== "ECONNRESET"), "node https: no upload ended with ECONNRESET",
   results);
done();
