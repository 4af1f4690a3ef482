// Integration test: the JavaScript Azure Tables SDK (@azure/data-tables)
// reading the secondary endpoint served from a PostgreSQL hot standby.
// Run by tests/integration/test_pg_replica.py once the standby has the
// tables it wrote (Rep with the entity a/1 of v 1; Big with 2,500
// entities p/00000..02499), with:
//   TABLED_SECONDARY  the secondary endpoint (http://HOST:PORT/ACCOUNT-secondary)
//   TABLED_ACCOUNT    the account name
//   TABLED_KEY        its key
//   TABLED_JS_DEPS    the node_modules directory holding @azure/data-tables
// Prints TAP and exits 1 when a check fails.
import { done, eq, ok, run, loadSdk } from "./tap.mjs";

const sdk = loadSdk();
const { TableServiceClient, TableClient, AzureNamedKeyCredential } = sdk;
const ep = process.env.TABLED_SECONDARY;
const cred = new AzureNamedKeyCredential(process.env.TABLED_ACCOUNT, process.env.TABLED_KEY);
const HTTP = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };

await run("secondary reads", async () => {
  const svc = new TableServiceClient(ep, cred, HTTP);
  const names = [];
  for await (const t of svc.listTables()) names.push(t.name);
  ok(names.includes("Rep") && names.includes("Big"), "listTables on the secondary", names);
  const rep = new TableClient(ep, "Rep", cred, HTTP);
  const e = await rep.getEntity("a", "1");
  eq(e.v, 1, "getEntity on the secondary");
  const big = new TableClient(ep, "Big", cred, HTTP);
  const sizes = [];
  const keys = [];
  for await (const page of big.listEntities().byPage({ maxPageSize: 1000 })) {
    sizes.push(page.length);
    for (const x of page) keys.push(x.rowKey);
  }
  const want = Array.from({ length: 2500 }, (_, i) => String(i).padStart(5, "0"));
  eq(sizes, [1000, 1000, 500], "listEntities byPage(1000) on the secondary: page sizes");
  ok(JSON.stringify(keys) === JSON.stringify(want),
     "listEntities on the secondary: every entity once, in order", keys.slice(0, 5));
  try {
    await rep.createEntity({ partitionKey: "a", rowKey: "js" });
    ok(false, "createEntity on the secondary is refused");
  } catch (err) {
    const code = err.code || (err.details && err.details.odataError && err.details.odataError.code);
    ok(err.statusCode === 403 && code === "InsufficientAccountPermissions",
       "createEntity on the secondary: 403 InsufficientAccountPermissions",
       { status: err.statusCode, code });
  }
});
done();
