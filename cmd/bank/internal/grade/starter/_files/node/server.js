// The lesson's transfer API, as a starter: a correct transfer, and no
// idempotency at all yet. bank grade passes "plain" and fails the checks
// that need keys; the lines marked YOUR WORK are where the lesson goes.
//
// Run it the way bank grade does:  bank grade -- node server.js
'use strict';

const http = require('node:http');
const { Pool } = require('pg');

const DATABASE_URL = process.env.DATABASE_URL;
const PORT = Number(process.env.PORT);
// How long a claimed key stays locked before a retry may take it over.
const LOCK_TTL_MS = Number(process.env.LOCK_TTL_MS || 30000);

// The demo tokens: user N owns account N.
const USERS = new Map([['token-ada', 1], ['token-bola', 2], ['token-chidi', 3]]);

const pool = new Pool({ connectionString: DATABASE_URL });
pool.on('error', (err) => console.error('idle database connection:', err.message));

// An answer that is not a transfer: a status and an error body.
class Answer extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.body = { error: code, message };
  }
}

async function createTables() {
  // YOUR WORK: create your key table here (CREATE TABLE IF NOT EXISTS),
  // keyed by (user, key), with the request's fingerprint, the stored
  // answer and the lock (see the contract: bank grade --contract).
}

// The body as {from, to, amountKobo}, or an Answer of 400.
function readRequest(raw) {
  let req;
  try {
    req = JSON.parse(raw);
  } catch {
    throw new Answer(400, 'invalid_json', 'the body is not JSON');
  }
  const allowed = ['from', 'to', 'amountKobo'];
  if (typeof req !== 'object' || req === null || Array.isArray(req) ||
      Object.keys(req).some((k) => !allowed.includes(k))) {
    throw new Answer(400, 'invalid_json', 'the body must be {from, to, amountKobo}');
  }
  const whole = (v) => Number.isSafeInteger(v) && v > 0;
  if (!whole(req.from) || !whole(req.to)) {
    throw new Answer(400, 'invalid_account', 'from and to must be account ids');
  }
  if (!whole(req.amountKobo)) {
    throw new Answer(400, 'invalid_amount', 'amountKobo must be a whole number above 0');
  }
  return req;
}

// Move the money in ONE transaction; return [status, body].
async function transfer(user, req) {
  const { from, to, amountKobo } = req;
  const db = await pool.connect();
  try {
    await db.query('BEGIN');
    // Lock both rows, in id order, so two transfers never deadlock.
    const { rows } = await db.query(
      'SELECT id, owner_id, status, balance_kobo FROM accounts' +
      ' WHERE id IN ($1, $2) ORDER BY id FOR UPDATE', [from, to]);
    const sender = rows.find((r) => Number(r.id) === from);
    const recipient = rows.find((r) => Number(r.id) === to);
    let answer;
    try {
      if (from === to) {
        throw new Answer(422, 'same_account', 'from and to are the same account');
      }
      if (!sender || Number(sender.owner_id) !== user) {
        throw new Answer(404, 'account_not_found', 'from is not one of your accounts');
      }
      if (sender.status !== 'active') {
        throw new Answer(422, 'account_not_active', 'your account is ' + sender.status);
      }
      if (!recipient || recipient.status !== 'active') {
        throw new Answer(422, 'recipient_unavailable', 'the recipient cannot receive money');
      }
      if (BigInt(sender.balance_kobo) < BigInt(amountKobo)) {
        throw new Answer(422, 'insufficient_funds', 'the balance is too low');
      }
      await db.query('UPDATE accounts SET balance_kobo = balance_kobo - $1 WHERE id = $2', [amountKobo, from]);
      await db.query('UPDATE accounts SET balance_kobo = balance_kobo + $1 WHERE id = $2', [amountKobo, to]);
      const inserted = await db.query(
        'INSERT INTO transfers (from_account, to_account, amount_kobo) VALUES ($1, $2, $3) RETURNING id',
        [from, to, amountKobo]);
      answer = [201, { transferId: Number(inserted.rows[0].id), from, to, amountKobo }];
    } catch (err) {
      if (!(err instanceof Answer)) throw err;
      answer = [err.status, err.body]; // a business refusal is an answer too
    }
    // YOUR WORK: store the answer (status and body) under the key here,
    // in this same transaction, refusals too, after checking that this
    // request still holds the key's lock (the fencing token). A crash
    // between two commits must not transfer twice.
    await db.query('COMMIT');
    db.release();
    return answer;
  } catch (err) {
    await db.query('ROLLBACK').catch(() => {});
    db.release(err); // a connection that failed is closed, not reused
    throw err;
  }
}

async function route(req, user, body) {
  const path = req.url.split('?')[0];
  if (path !== '/transfers') {
    throw new Answer(404, 'not_found', 'no such endpoint');
  }
  // YOUR WORK (recommended): GET /transfers?key=KEY says what became of
  // a key of this user's (the contract's lookup check).
  if (req.method !== 'POST') {
    throw new Answer(405, 'method_not_allowed', 'use POST /transfers');
  }
  if (user === undefined) {
    throw new Answer(401, 'unauthorized', 'no or unknown bearer token');
  }
  const transferRequest = readRequest(body);
  // The Idempotency-Key header is ignored, so every retry moves money again.
  // YOUR WORK: claim the key here, before the transfer: refuse a request
  // without one (400); claim (user, key) atomically with the request's
  // fingerprint; a copy of a finished request gets its stored answer
  // again, one still in progress gets 409, and the same key with another
  // request gets 422. If the transfer fails with a 5xx, release the key
  // so that a retry can make it.
  return transfer(user, transferRequest);
}

function send(res, status, body) {
  const headers = { 'Content-Type': 'application/json' };
  if (status === 405) headers.Allow = 'POST';
  res.writeHead(status, headers);
  res.end(JSON.stringify(body));
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', async () => {
    const auth = req.headers.authorization || '';
    const user = USERS.get(auth.replace(/^Bearer /, ''));
    try {
      const [status, body] = await route(req, user, Buffer.concat(chunks).toString());
      send(res, status, body);
    } catch (err) {
      if (err instanceof Answer) {
        send(res, err.status, err.body);
      } else { // nothing was committed: a retry is safe
        console.error(err);
        send(res, 500, { error: 'internal_error', message: 'something went wrong' });
      }
    }
  });
});

createTables().then(() => {
  server.listen(PORT, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${PORT}`));
});
