// Test material for `bank grade`: a transfer server in Node.js whose
// idempotency keys live OUTSIDE PostgreSQL, in Redis or in process memory.
// The transfer itself is correct (one PostgreSQL transaction, a conditional
// debit, the contract's statuses, 401/404); each key store makes one known
// mistake on purpose, marked in the code with `// MISTAKE <store>: ...`, so
// that the grader's tests can check that it catches them.
//
// The store is chosen by the environment variable STORE:
//   redis-after-commit    the key claimed in Redis with SET NX PX (a random
//                         lock id and the request's fingerprint stored with
//                         it), the transfer committed in PostgreSQL, then the
//                         answer written to Redis after the commit. Otherwise
//                         as correct as Redis allows. Mistake: rule 4, the
//                         answer is not stored in the transfer's transaction.
//   redis-check-then-set  as above, but the claim is a GET followed by a plain
//                         SET (no NX): copies that arrive together all run.
//   memory                keys in a Map in this process, claimed atomically,
//                         otherwise correct. Mistake: lost on restart and not
//                         shared between two instances.
// Any other STORE exits 2.
//
// Environment: DATABASE_URL, PORT (listens on 127.0.0.1:$PORT), LOCK_TTL_MS,
// REDIS_URL (the redis-* stores), STORE.
//
// Run it:
//   npm ci && STORE=name REDIS_URL=redis://127.0.0.1:PORT bank grade -- node server.js
// e.g. with a Redis of your own, without persistence, on a free port P:
//   redis-server --bind 127.0.0.1 --port P --save '' --appendonly no &

'use strict';

const http = require('node:http');
const crypto = require('node:crypto');
const { Pool } = require('pg');

const STORES = ['redis-after-commit', 'redis-check-then-set', 'memory'];
const STORE = process.env.STORE || '';
if (!STORES.includes(STORE)) {
  console.error(`STORE must be one of ${STORES.join(', ')}; got ${JSON.stringify(STORE)}`);
  process.exit(2);
}

const DATABASE_URL = process.env.DATABASE_URL;
const PORT = Number(process.env.PORT);
const LOCK_TTL_MS = Number(process.env.LOCK_TTL_MS || 2000);
const REDIS_URL = process.env.REDIS_URL;
if (!DATABASE_URL || !Number.isInteger(PORT) || PORT <= 0 || !(LOCK_TTL_MS > 0)) {
  console.error('need DATABASE_URL, PORT and a positive LOCK_TTL_MS in the environment');
  process.exit(2);
}
if (STORE.startsWith('redis-') && !REDIS_URL) {
  console.error(`STORE=${STORE} needs REDIS_URL (redis://host:port)`);
  process.exit(2);
}

// How long a finished key's answer is kept (the lesson keeps them for a day).
const DONE_TTL_MS = 24 * 60 * 60 * 1000;

// Every check of a grade run has its own database: the Redis keys are
// prefixed with its name, so that two databases never share a key.
const DB_NAME = decodeURIComponent(new URL(DATABASE_URL).pathname.replace(/^\//, '')) || 'bank';

const TOKENS = { 'token-ada': 1, 'token-bola': 2, 'token-chidi': 3 };
const KEY_RE = /^[A-Za-z0-9_-]{16,64}$/;

const pool = new Pool({ connectionString: DATABASE_URL, max: 20 });
pool.on('error', (err) => console.error('pg pool:', err.message));

// ---------------------------------------------------------------- helpers

// JSON with every object's keys sorted, so that {"to":2,"from":1} and
// {"from":1,"to":2} have one fingerprint.
function canonical(v) {
  if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
  if (v !== null && typeof v === 'object') {
    return '{' + Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + canonical(v[k])).join(',') + '}';
  }
  return JSON.stringify(v);
}

function fingerprint(method, path, body) {
  return crypto.createHash('sha256').update(method + ' ' + path + '\n' + canonical(body)).digest('hex');
}

function send(res, status, body, headers = {}) {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function err(code, message) {
  return { error: code, message };
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > 64 * 1024) {
        reject(new Error('body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function newLockId() {
  return crypto.randomBytes(16).toString('hex');
}

// A stored record (in Redis as JSON, in memory as an object):
//   { state: 'in_progress', lockId, fingerprint }
//   { state: 'completed', lockId, fingerprint, responseStatus, responseBody }

// ------------------------------------------------------------ Redis stores

let redis = null;

// Store the answer only if this request still holds the lock (its lock id is
// the one in Redis): a request that lost its key to a takeover must not
// overwrite the answer of the one that took it over.
const COMPLETE_LUA = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local ok, rec = pcall(cjson.decode, v)
if not ok or rec.lockId ~= ARGV[1] or rec.state ~= 'in_progress' then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`;

// Give the key back (after a 5xx) only if this request still holds it.
const RELEASE_LUA = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local ok, rec = pcall(cjson.decode, v)
if not ok or rec.lockId ~= ARGV[1] or rec.state ~= 'in_progress' then return 0 end
redis.call('DEL', KEYS[1])
return 1`;

function redisKey(userId, key) {
  // Scoped to the user: (database, user, key), not key alone.
  return `${DB_NAME}:idem:${userId}:${key}`;
}

function parseRec(v) {
  if (v == null) return null;
  try {
    return JSON.parse(v);
  } catch {
    return null;
  }
}

const redisStore = {
  // Returns { claimed: true, lockId } or { claimed: false, rec }.
  async claim(userId, key, fp) {
    const k = redisKey(userId, key);
    for (let attempt = 0; attempt < 5; attempt++) {
      const lockId = newLockId();
      const value = JSON.stringify({ state: 'in_progress', lockId, fingerprint: fp });
      if (STORE === 'redis-check-then-set') {
        // MISTAKE redis-check-then-set: the claim is a GET followed by a plain
        // SET (no NX). Copies that arrive together all GET nothing, all SET
        // their own lock, and all run the transfer: the check and the set are
        // two commands, and another copy's pair can come between them.
        const cur = parseRec(await redis.get(k));
        if (cur) return { claimed: false, rec: cur };
        await redis.set(k, value, { PX: LOCK_TTL_MS });
        return { claimed: true, lockId };
      }
      // Atomic claim: of many copies at once, exactly one SET NX succeeds.
      // The PX TTL is the lock's expiry: after a crash the key disappears
      // after LOCK_TTL_MS and the next retry's SET NX takes it over.
      const ok = await redis.set(k, value, { NX: true, PX: LOCK_TTL_MS });
      if (ok === 'OK') return { claimed: true, lockId };
      const cur = parseRec(await redis.get(k));
      if (cur) return { claimed: false, rec: cur };
      // The key expired or was given back between SET NX and GET: try again.
    }
    return { claimed: false, rec: { state: 'in_progress' } };
  },

  async get(userId, key) {
    return parseRec(await redis.get(redisKey(userId, key)));
  },

  // The fencing check, made inside the transfer's transaction just before
  // COMMIT: does this request still hold the key? (As close as Redis allows:
  // Redis is not part of the PostgreSQL transaction, so the check and the
  // commit are still two steps.)
  async stillHolds(userId, key, lockId) {
    const cur = parseRec(await redis.get(redisKey(userId, key)));
    return !!cur && cur.state === 'in_progress' && cur.lockId === lockId;
  },

  async complete(userId, key, lockId, fp, status, body) {
    const value = JSON.stringify({
      state: 'completed', lockId, fingerprint: fp, responseStatus: status, responseBody: body,
    });
    const r = await redis.eval(COMPLETE_LUA, {
      keys: [redisKey(userId, key)],
      arguments: [lockId, value, String(DONE_TTL_MS)],
    });
    return r === 1;
  },

  async release(userId, key, lockId) {
    await redis.eval(RELEASE_LUA, { keys: [redisKey(userId, key)], arguments: [lockId] });
  },
};

// ------------------------------------------------------------ memory store

// MISTAKE memory: the keys live in this process's memory. A restart loses
// them all (a retry after it transfers again), and a second instance of the
// server has a Map of its own, so a copy that reaches the other instance
// runs again.
const memory = new Map(); // `${userId}:${key}` -> record (+ expiresAt)

function memGet(userId, key) {
  const k = `${userId}:${key}`;
  const rec = memory.get(k);
  if (rec && rec.expiresAt <= Date.now()) {
    memory.delete(k); // the lock expired: the key may be taken over
    return null;
  }
  return rec || null;
}

const memoryStore = {
  // Synchronous check-and-set: Node runs one piece of JavaScript at a time,
  // so nothing can come between the get and the set. Atomic in one process.
  async claim(userId, key, fp) {
    const cur = memGet(userId, key);
    if (cur) return { claimed: false, rec: cur };
    const lockId = newLockId();
    memory.set(`${userId}:${key}`, {
      state: 'in_progress', lockId, fingerprint: fp, expiresAt: Date.now() + LOCK_TTL_MS,
    });
    return { claimed: true, lockId };
  },
  async get(userId, key) {
    return memGet(userId, key);
  },
  async stillHolds(userId, key, lockId) {
    const cur = memGet(userId, key);
    return !!cur && cur.state === 'in_progress' && cur.lockId === lockId;
  },
  async complete(userId, key, lockId, fp, status, body) {
    const cur = memGet(userId, key);
    if (!cur || cur.state !== 'in_progress' || cur.lockId !== lockId) return false;
    memory.set(`${userId}:${key}`, {
      state: 'completed', lockId, fingerprint: fp, responseStatus: status, responseBody: body,
      expiresAt: Date.now() + DONE_TTL_MS,
    });
    return true;
  },
  async release(userId, key, lockId) {
    const cur = memGet(userId, key);
    if (cur && cur.state === 'in_progress' && cur.lockId === lockId) memory.delete(`${userId}:${key}`);
  },
};

const store = STORE === 'memory' ? memoryStore : redisStore;

// ---------------------------------------------------------------- transfer

class Refusal extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

class LockLost extends Error {}

// One PostgreSQL transaction: lock both accounts, refuse what must be
// refused, debit conditionally, credit, insert the transfers row, check the
// fence, commit. Returns { status, body } for the answer; throws on a fault.
async function transfer(userId, key, lockId, fp, from, to, amountKobo) {
  const client = await pool.connect();
  let inTx = false;
  try {
    await client.query('BEGIN');
    inTx = true;
    const { rows } = await client.query(
      'SELECT id, owner_id, status, balance_kobo FROM accounts WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE',
      [[from, to]],
    );
    const src = rows.find((r) => Number(r.id) === from);
    const dst = rows.find((r) => Number(r.id) === to);
    if (!src || Number(src.owner_id) !== userId) {
      throw new Refusal(404, 'account_not_found', `account ${from} does not exist or is not yours`);
    }
    if (!dst) throw new Refusal(404, 'account_not_found', `account ${to} does not exist`);
    if (src.status !== 'active') throw new Refusal(422, 'account_frozen', `account ${from} is ${src.status}`);
    if (dst.status !== 'active') throw new Refusal(422, 'account_frozen', `account ${to} is ${dst.status}`);

    // The conditional debit: it moves money only if the balance covers it.
    const debit = await client.query(
      `UPDATE accounts SET balance_kobo = balance_kobo - $2
        WHERE id = $1 AND status = 'active' AND balance_kobo >= $2`,
      [from, amountKobo],
    );
    if (debit.rowCount !== 1) {
      throw new Refusal(422, 'insufficient_funds', `account ${from} cannot cover ${amountKobo} kobo`);
    }
    await client.query('UPDATE accounts SET balance_kobo = balance_kobo + $2 WHERE id = $1', [to, amountKobo]);
    const ins = await client.query(
      'INSERT INTO transfers (from_account, to_account, amount_kobo) VALUES ($1, $2, $3) RETURNING id',
      [from, to, amountKobo],
    );
    const transferId = Number(ins.rows[0].id);

    // Fencing: only the request that still holds the key may commit.
    if (!(await store.stillHolds(userId, key, lockId))) throw new LockLost('lost the key to a takeover');

    await client.query('COMMIT');
    inTx = false;
    return { status: 201, body: { transferId, from, to, amountKobo } };
  } catch (e) {
    if (inTx) await client.query('ROLLBACK').catch(() => {});
    if (e instanceof Refusal) return { status: e.status, body: err(e.code, e.message), refusal: true };
    throw e;
  } finally {
    client.release();
  }
}

// ---------------------------------------------------------------- handlers

function replay(res, rec) {
  send(res, rec.responseStatus, rec.responseBody, { 'Idempotent-Replayed': 'true' });
}

function inProgress(res) {
  send(res, 409, err('in_progress', 'a request with this key is still being processed; retry'), {
    'Retry-After': '1',
  });
}

function mismatch(res) {
  send(res, 422, err('idempotency_key_reused', 'this key was used with a different request'));
}

async function postTransfer(req, res, userId) {
  const key = req.headers['idempotency-key'];
  if (key === undefined || key === '') return send(res, 400, err('missing_idempotency_key', 'send an Idempotency-Key header'));
  if (!KEY_RE.test(key)) return send(res, 400, err('bad_idempotency_key', 'Idempotency-Key: 16 to 64 letters, digits, - or _'));

  let body;
  try {
    body = JSON.parse(await readBody(req));
  } catch {
    return send(res, 400, err('bad_json', 'the body is not JSON'));
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return send(res, 400, err('bad_request', 'the body must be a JSON object'));
  }

  const fp = fingerprint('POST', '/transfers', body);
  const c = await store.claim(userId, key, fp);
  if (!c.claimed) {
    const rec = c.rec;
    if (rec.fingerprint && rec.fingerprint !== fp) return mismatch(res);
    if (rec.state === 'completed') return replay(res, rec);
    return inProgress(res);
  }
  const lockId = c.lockId;

  let answer;
  const { from, to, amountKobo } = body;
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || !Number.isSafeInteger(amountKobo)) {
    answer = { status: 422, body: err('invalid_request', 'from, to and amountKobo must be integers') };
  } else if (amountKobo <= 0) {
    answer = { status: 422, body: err('invalid_amount', 'amountKobo must be positive') };
  } else if (from === to) {
    answer = { status: 422, body: err('same_account', 'from and to must differ') };
  } else {
    try {
      answer = await transfer(userId, key, lockId, fp, from, to, amountKobo);
    } catch (e) {
      if (e instanceof LockLost) {
        // Rolled back: another request took the key over and answers for it.
        return inProgress(res);
      }
      // Something broke: nothing moved; give the key back so that a retry
      // with the same key makes the transfer.
      console.error('transfer failed:', e.message);
      await store.release(userId, key, lockId).catch((e2) => console.error('release:', e2.message));
      const status = e.code === '57014' ? 503 : 500;
      return send(res, status, err('internal', 'the transfer failed; nothing moved; retry with the same key'));
    }
  }

  // MISTAKE redis-after-commit: the answer is written to Redis only after
  // PostgreSQL has committed the transfer, not in the same transaction (rule
  // 4). A crash between the COMMIT and this write leaves the key in progress
  // with no answer; its lock expires, the retry takes it over and transfers
  // again.
  // MISTAKE redis-check-then-set: the same (its answer, too, is written
  // after the commit), besides its claim above.
  try {
    const stored = await store.complete(userId, key, lockId, fp, answer.status, answer.body);
    if (!stored) console.error(`key ${key}: lost the lock before its answer was stored`);
  } catch (e) {
    console.error(`key ${key}: storing the answer failed:`, e.message);
  }
  send(res, answer.status, answer.body);
}

async function getTransfer(req, res, userId, url) {
  const key = url.searchParams.get('key');
  if (!key) return send(res, 400, err('missing_key', 'GET /transfers?key=KEY'));
  const rec = KEY_RE.test(key) ? await store.get(userId, key) : null;
  if (!rec) return send(res, 404, err('unknown_key', 'no request of yours with this key'));
  const out = { key, status: rec.state };
  if (rec.state === 'completed') {
    out.responseStatus = rec.responseStatus;
    out.responseBody = rec.responseBody;
  }
  send(res, 200, out);
}

async function handle(req, res) {
  const url = new URL(req.url, 'http://127.0.0.1');
  if (url.pathname !== '/transfers') return send(res, 404, err('not_found', 'no such route'));
  if (req.method !== 'POST' && req.method !== 'GET') {
    return send(res, 405, err('method_not_allowed', 'GET or POST'), { Allow: 'GET, POST' });
  }
  const m = /^Bearer (\S+)$/.exec(req.headers.authorization || '');
  const userId = m ? TOKENS[m[1]] : undefined;
  if (!userId) return send(res, 401, err('unauthorized', 'no or unknown bearer token'));
  if (req.method === 'POST') return postTransfer(req, res, userId);
  return getTransfer(req, res, userId, url);
}

// ---------------------------------------------------------------- start-up

async function main() {
  if (STORE !== 'memory') {
    const { createClient } = require('redis');
    redis = createClient({ url: REDIS_URL });
    redis.on('error', (e) => console.error('redis:', e.message));
    await redis.connect();
  }
  // The database must be reachable before the server listens.
  await pool.query('SELECT 1');

  const server = http.createServer((req, res) => {
    handle(req, res).catch((e) => {
      console.error('request failed:', e.message);
      send(res, 500, err('internal', 'something broke'));
    });
  });
  server.listen(PORT, '127.0.0.1', () => {
    console.log(`transfer server (STORE=${STORE}) on 127.0.0.1:${PORT}, lock TTL ${LOCK_TTL_MS} ms`);
  });

  const stop = () => {
    server.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e) => {
  console.error('start-up failed:', e.message);
  process.exit(1);
});
