// test_legacy_atom.cjs - a full lifecycle through the legacy Node SDK
// (npm azure 0.7.19, whose TableService speaks only AtomPub XML with
// x-ms-version 2011-08-18) against tabled: tables, every entity operation,
// typed values, a query with continuation, a batch, errors. Prints TAP.
// Environment: TABLED_LEGACY_DEPS (node_modules holding azure), TABLED_HOST
// (http://127.0.0.1:PORT).
'use strict';
const path = require('path');
const assert = require('assert');
const azure = require(path.join(process.env.TABLED_LEGACY_DEPS, 'azure'));

const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
let n = 0, failed = 0;
function ok(cond, name, diag) {
  n++;
  if (cond) {
    console.log('ok ' + n + ' - ' + name);
  } else {
    failed++;
    console.log('not ok ' + n + ' - ' + name);
    if (diag !== undefined) console.log('# ' + String(diag).split('\n').join('\n# '));
  }
}
function eq(got, want, name) {
  let same = true;
  try { assert.deepStrictEqual(got, want); } catch (e) { same = false; }
  ok(same, name, 'got:  ' + JSON.stringify(got) + '\nwant: ' + JSON.stringify(want));
}
// Calls fn(...args, callback) and resolves with the callback's arguments.
function call(obj, fn, ...args) {
  return new Promise((resolve) => obj[fn](...args, (...res) => resolve(res)));
}
// The entity's own properties (no '_' metadata).
function plain(e) {
  const o = {};
  for (const k of Object.keys(e || {})) if (k !== '_') o[k] = e[k];
  return o;
}

async function main() {
  const ts = azure.createTableService('devstoreaccount1', KEY, process.env.TABLED_HOST);
  ts.usePathStyleUri = true;   // the SDK's emulator addressing: /ACCOUNT/...
  const T = 'legacyatom';

  // tables
  let [err, res] = await call(ts, 'createTable', T);
  ok(!err && res && res.TableName === T, 'createTable', err);
  [err, res] = await call(ts, 'createTableIfNotExists', T);
  ok(!err && res === false, 'createTableIfNotExists on an existing table -> false', err);
  [err, res] = await call(ts, 'getTable', T);
  ok(!err && res && res.TableName === T, 'getTable', err);
  [err, res] = await call(ts, 'createTable', 'legacyatom2');
  [err, res] = await call(ts, 'queryTables');
  ok(!err && res.map((t) => t.TableName).includes(T) &&
     res.map((t) => t.TableName).includes('legacyatom2'), 'queryTables lists both', err);
  [err] = await call(ts, 'deleteTable', 'legacyatom2');
  ok(!err, 'deleteTable', err);
  [err, res] = await call(ts, 'getTable', 'legacyatom2');
  ok(err && err.code === 'ResourceNotFound' && err.statusCode === 404,
     'getTable after deleteTable -> 404 ResourceNotFound', err);

  // insert and read back every type
  const when = new Date(Date.UTC(2020, 1, 29, 23, 59, 58, 999));
  const ent = {
    PartitionKey: 'p', RowKey: 'r1',
    S: 'x < y & "z" \'w\' \u00e9\u20ac', I: -2147483648, D: 2.5, B: true, F: false,
    T: when,
    L: { '$': { type: 'Edm.Int64' }, '_': '1234567890123' },
    G: { '$': { type: 'Edm.Guid' }, '_': 'c9da6455-213d-42c9-9a79-3e9149a57833' },
    Bin: { '$': { type: 'Edm.Binary' }, '_': 'hello' },
  };
  [err, res] = await call(ts, 'insertEntity', T, ent);
  const etag1 = res && res._ && res._.etag;
  ok(!err && /^W\/"datetime'.*'"$/.test(etag1 || ''), 'insertEntity -> entry with m:etag', err);
  [err, res] = await call(ts, 'queryEntity', T, 'p', 'r1');
  const want = {
    PartitionKey: 'p', RowKey: 'r1', S: ent.S, I: -2147483648, D: 2.5, B: true, F: false,
    T: when, L: 1234567890123, G: 'c9da6455-213d-42c9-9a79-3e9149a57833', Bin: 'hello',
  };
  const got = plain(res);
  ok(!err && got.Timestamp instanceof Date, 'queryEntity -> Timestamp is a date', err);
  delete got.Timestamp;
  eq(got, want, 'queryEntity returns every typed value as inserted');
  ok(res && res._.etag === etag1, 'queryEntity etag = insert etag');
  [err] = await call(ts, 'insertEntity', T, { PartitionKey: 'p', RowKey: 'r1' });
  ok(err && err.code === 'EntityAlreadyExists' && err.statusCode === 409,
     'insertEntity twice -> 409 EntityAlreadyExists', err);

  // update with the etag, stale etag, merge, upserts, delete
  [err, res] = await call(ts, 'updateEntity', T,
    { PartitionKey: 'p', RowKey: 'r1', A: 'a', _: { etag: etag1 } }, { checkEtag: true });
  ok(!err, 'updateEntity with checkEtag', err);
  [err] = await call(ts, 'mergeEntity', T,
    { PartitionKey: 'p', RowKey: 'r1', M: 'm', _: { etag: etag1 } }, { checkEtag: true });
  ok(err && err.code === 'UpdateConditionNotSatisfied' && err.statusCode === 412,
     'mergeEntity with the stale etag -> 412', err);
  [err] = await call(ts, 'mergeEntity', T, { PartitionKey: 'p', RowKey: 'r1', M: 'm' });
  ok(!err, 'mergeEntity', err);
  [err, res] = await call(ts, 'queryEntity', T, 'p', 'r1');
  const after = plain(res);
  delete after.Timestamp;
  eq(after, { PartitionKey: 'p', RowKey: 'r1', A: 'a', M: 'm' }, 'after update + merge');
  [err] = await call(ts, 'insertOrReplaceEntity', T, { PartitionKey: 'p', RowKey: 'r2', X: 1 });
  ok(!err, 'insertOrReplaceEntity (new)', err);
  [err] = await call(ts, 'insertOrMergeEntity', T, { PartitionKey: 'p', RowKey: 'r2', Y: 2 });
  ok(!err, 'insertOrMergeEntity (existing)', err);
  [err, res] = await call(ts, 'queryEntity', T, 'p', 'r2');
  ok(!err && res.X === 1 && res.Y === 2, 'upserts stored X and Y', err || JSON.stringify(res));
  [err] = await call(ts, 'deleteEntity', T, { PartitionKey: 'p', RowKey: 'r2' });
  ok(!err, 'deleteEntity', err);
  [err] = await call(ts, 'queryEntity', T, 'p', 'r2');
  ok(err && err.code === 'ResourceNotFound', 'queryEntity after delete -> ResourceNotFound', err);

  // a batch of inserts into one partition
  ts.beginBatch();
  for (let i = 0; i < 7; i++) ts.insertEntity(T, { PartitionKey: 'q', RowKey: 'k' + i, N: i });
  [err] = await call(ts, 'commitBatch');
  // (this SDK's filter chain drops the per-operation results, and it
  // throws on a failed changeset, so only the success path is driven here;
  // test_atom.py covers a failing Atom changeset)
  ok(!err, 'commitBatch of 7 inserts succeeds', err);
  [err, res] = await call(ts, 'queryEntity', T, 'q', 'k6');
  ok(!err && res.N === 6, 'the batch stored its entities', err);

  // query with $filter, $top and continuation pages
  const rows = [];
  let pages = 0;
  const q = azure.TableQuery.select().from(T).where('PartitionKey eq ?', 'q').top(3);
  let [e2, ents, cont] = await call(ts, 'queryEntities', q);
  while (!e2 && pages < 10) {
    pages++;
    for (const x of ents) rows.push(x.RowKey + '=' + x.N);
    if (!cont || !cont.hasNextPage()) break;
    [e2, ents, cont] = await call(cont, 'getNextPage');
  }
  eq([e2 || null, pages, rows],
     [null, 3, ['k0=0', 'k1=1', 'k2=2', 'k3=3', 'k4=4', 'k5=5', 'k6=6']],
     'queryEntities top 3 over 7 entities: 3 pages through continuation tokens');
  [err, res] = await call(ts, 'queryEntities',
    azure.TableQuery.select('N').from(T).where('PartitionKey eq ? and N ge ?', 'q', 5));
  ok(!err && res.length === 2 && res[0].N === 5 && res[0].RowKey === undefined,
     'queryEntities with $select and a typed filter', err || JSON.stringify(res));

  [err] = await call(ts, 'deleteTable', T);
  ok(!err, 'deleteTable at the end', err);
  console.log('1..' + n);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  ok(false, 'the lifecycle ran to its end', e && e.stack);
  console.log('1..' + n);
  process.exit(1);
});
