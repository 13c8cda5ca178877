// Webhook consumer: credits a customer's account when the payment provider
// says money arrived (Standard Webhooks 1.0, at-least-once delivery).
//
//   DATABASE_URL     PostgreSQL (the bank: accounts, deposits, ...)
//   PORT             port to listen on, at 127.0.0.1
//   WEBHOOK_SECRET   whsec_<base64>, the endpoint's signing secret
//   CONSUMER_MISTAKE (testing only) switches on one deliberate mistake:
//                    no-payment-dedupe | ack-before-commit |
//                    high-water-mark | duplicate-not-acked
//
// One delivery = verify signature and timestamp, then ONE transaction:
// record the event (unique on event id, unique on payment reference),
// add the amount to the balance, insert the deposit row, COMMIT; only then
// answer 2xx. A unique violation (23505) means "already processed": 2xx.

import http from 'node:http';
import pg from 'pg';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

const MISTAKES = ['no-payment-dedupe', 'ack-before-commit', 'high-water-mark', 'duplicate-not-acked'];
const MISTAKE = process.env.CONSUMER_MISTAKE || '';

const HOST = '127.0.0.1';
const PATH = '/webhooks';
const MAX_BODY_BYTES = 1024 * 1024;
const ANSWER_DEADLINE_MS = 4000; // the provider gives up after 5 s
const MAX_EVENT_ID_LENGTH = 255;
const MAX_PAYMENT_REF_LENGTH = 255;
const INT4_MAX = 2147483647;

function log(line) {
  process.stderr.write(`${new Date().toISOString()} ${line}\n`);
}

function fatal(message) {
  log(`fatal: ${message}`);
  process.exit(1);
}

// ---------------------------------------------------------------- config

if (MISTAKE && !MISTAKES.includes(MISTAKE)) {
  fatal(`CONSUMER_MISTAKE=${JSON.stringify(MISTAKE)} is not one of ${MISTAKES.join(', ')}`);
}
const { DATABASE_URL, PORT, WEBHOOK_SECRET } = process.env;
if (!DATABASE_URL) fatal('DATABASE_URL is not set');
if (!PORT || !/^\d+$/.test(PORT) || Number(PORT) < 1 || Number(PORT) > 65535) {
  fatal(`PORT must be a TCP port number, got ${JSON.stringify(PORT ?? null)}`);
}
if (!WEBHOOK_SECRET) fatal('WEBHOOK_SECRET is not set');

let webhook;
try {
  webhook = new Webhook(WEBHOOK_SECRET);
} catch {
  fatal('WEBHOOK_SECRET is not whsec_<base64> (value not shown)');
}

const pool = new pg.Pool({
  connectionString: DATABASE_URL,
  max: 10,
  connectionTimeoutMillis: 2000, // waiting for a pooled connection
  statement_timeout: 3000, // no statement may hold a delivery past the provider's 5 s
  idle_in_transaction_session_timeout: 10000,
  application_name: 'webhook-consumer',
});
pool.on('error', (err) => log(`database: idle connection error: ${err.message}`));

// ---------------------------------------------------------------- schema

// The consumer's own table: one row per processed event, in the same
// transaction as the credit. Both keys are unique: a second delivery of the
// event (same id) or a second event about the same payment (another id, same
// reference) fails to insert with 23505 and credits nothing.
const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS webhook_events (
     event_id     text        NOT NULL,
     payment_ref  text        NOT NULL,
     event_type   text        NOT NULL,
     event_time   timestamptz,
     account_id   integer     NOT NULL,
     amount_kobo  bigint      NOT NULL,
     processed_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE UNIQUE INDEX IF NOT EXISTS webhook_events_event_id_key ON webhook_events (event_id)`,
];
if (MISTAKE !== 'no-payment-dedupe') {
  SCHEMA.push(`CREATE UNIQUE INDEX IF NOT EXISTS webhook_events_payment_ref_key ON webhook_events (payment_ref)`);
}

async function ensureSchema() {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // Two consumers starting at once must not race on CREATE ... IF NOT EXISTS.
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('webhook_events schema'))`);
    for (const sql of SCHEMA) await client.query(sql);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

// ---------------------------------------------------------------- the event

class BadEvent extends Error {}

// Returns { type, time, payment, account, amountKobo } or throws BadEvent.
function parseEvent(body) {
  let event;
  try {
    event = JSON.parse(body.toString('utf8'));
  } catch {
    throw new BadEvent('body is not JSON');
  }
  if (event === null || typeof event !== 'object' || Array.isArray(event)) throw new BadEvent('body is not a JSON object');
  if (typeof event.type !== 'string' || event.type === '') throw new BadEvent('no event type');
  const parsedTime = typeof event.timestamp === 'string' ? Date.parse(event.timestamp) : NaN;
  const time = Number.isNaN(parsedTime) ? null : new Date(parsedTime);
  if (event.type !== 'payment.received') return { type: event.type, time };

  const data = event.data;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) throw new BadEvent('no data object');
  const { payment, account, amountKobo } = data;
  if (typeof payment !== 'string' || payment === '' || payment.length > MAX_PAYMENT_REF_LENGTH) {
    throw new BadEvent('data.payment is not a payment reference');
  }
  if (!Number.isInteger(account) || account < 1 || account > INT4_MAX) throw new BadEvent('data.account is not an account id');
  if (!Number.isSafeInteger(amountKobo) || amountKobo <= 0) throw new BadEvent('data.amountKobo is not a positive whole number of kobo');
  return { type: event.type, time, payment, account, amountKobo };
}

// ---------------------------------------------------------------- the credit

// One transaction: record the event, credit the balance, insert the deposit.
// Returns { kind: 'credited' | 'duplicate' | 'no-account' | 'ignored-older', ... };
// throws on database trouble (the caller answers 5xx, the provider retries).
async function creditOnce(eventId, ev) {
  const client = await pool.connect();
  let discard = false;
  try {
    await client.query('BEGIN');
    if (MISTAKE === 'high-water-mark' && ev.time) {
      // Out-of-order protection: skip anything older than what we have seen.
      const { rows } = await client.query('SELECT max(event_time) AS newest FROM webhook_events');
      if (rows[0].newest && ev.time < rows[0].newest) {
        await client.query('ROLLBACK');
        return { kind: 'ignored-older', newest: rows[0].newest.toISOString() };
      }
    }
    await client.query(
      `INSERT INTO webhook_events (event_id, payment_ref, event_type, event_time, account_id, amount_kobo)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [eventId, ev.payment, ev.type, ev.time, ev.account, ev.amountKobo],
    );
    const updated = await client.query(
      'UPDATE accounts SET balance_kobo = balance_kobo + $1 WHERE id = $2 RETURNING balance_kobo',
      [ev.amountKobo, ev.account],
    );
    if (updated.rowCount === 0) {
      await client.query('ROLLBACK');
      return { kind: 'no-account' };
    }
    const deposit = await client.query(
      'INSERT INTO deposits (account_id, amount_kobo, source) VALUES ($1, $2, $3) RETURNING id',
      [ev.account, ev.amountKobo, ev.payment],
    );
    await client.query('COMMIT');
    return { kind: 'credited', depositId: deposit.rows[0].id, balance: updated.rows[0].balance_kobo };
  } catch (err) {
    try {
      await client.query('ROLLBACK');
    } catch {
      discard = true; // the connection is unusable: do not return it to the pool
    }
    if (err.code === '23505') {
      return { kind: 'duplicate', by: err.constraint === 'webhook_events_payment_ref_key' ? 'payment' : 'event id' };
    }
    throw err;
  } finally {
    client.release(discard);
  }
}

// Database errors that mean "this event can never be credited as sent".
const PERMANENT_DB_ERRORS = new Set(['22003' /* numeric out of range */, '23514' /* check violation */, '23503' /* foreign key */]);

// ---------------------------------------------------------------- HTTP

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(Object.assign(new Error('body too large'), { status: 413 }));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('aborted', () => reject(Object.assign(new Error('request aborted'), { status: 0 })));
  });
}

function header(req, name) {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(' ') : v;
}

async function handleDelivery(req, res) {
  const started = Date.now();
  const eventId = header(req, 'webhook-id');
  const msgTimestamp = header(req, 'webhook-timestamp');
  const facts = [`id=${JSON.stringify(eventId ?? null)}`, `webhook-timestamp=${JSON.stringify(msgTimestamp ?? null)}`];
  let answered = null; // { status, ms, why }
  let outcome = '';

  const answer = (status, body, why) => {
    if (answered) return;
    answered = { status, ms: Date.now() - started, why };
    if (res.writableEnded || res.destroyed) return;
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };
  // Answer within the provider's 5 s whatever happens below; a late commit
  // is then simply found as a duplicate on the redelivery.
  const deadline = setTimeout(() => answer(503, { error: 'still working, deliver again' }, 'deadline'), ANSWER_DEADLINE_MS);

  try {
    let body;
    try {
      body = await readBody(req);
    } catch (err) {
      outcome = `body not read: ${err.message}`;
      if (err.status) answer(err.status, { error: err.message });
      return;
    }
    facts.push(`bytes=${body.length}`);

    // 1. Verify first; write nothing unless the delivery is authentic and fresh.
    if (!eventId || eventId.length > MAX_EVENT_ID_LENGTH || !msgTimestamp || !/^\d{1,15}$/.test(msgTimestamp)) {
      outcome = 'rejected: missing or malformed webhook-id / webhook-timestamp';
      answer(400, { error: 'missing or malformed webhook headers' });
      return;
    }
    try {
      webhook.verify(body, req.headers, { jsonParse: false });
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      outcome = `rejected: ${err.message}`;
      answer(401, { error: 'signature verification failed' });
      return;
    }
    if (MISTAKE === 'ack-before-commit') {
      answer(200, { ok: true, status: 'accepted' }); // signature is fine: tell the provider, then process
    }

    // 2. Is it an event we understand?
    let ev;
    try {
      ev = parseEvent(body);
    } catch (err) {
      if (!(err instanceof BadEvent)) throw err;
      outcome = `refused: ${err.message}`;
      answer(400, { error: err.message });
      return;
    }
    facts.push(`type=${ev.type}`, `event-time=${ev.time ? ev.time.toISOString() : 'none'}`);
    if (ev.type !== 'payment.received') {
      outcome = 'ignored: not a payment.received event (nothing written)';
      answer(200, { ok: true, status: 'ignored' });
      return;
    }
    facts.push(`payment=${JSON.stringify(ev.payment)}`, `account=${ev.account}`, `amountKobo=${ev.amountKobo}`);

    // 3. Credit once, in one transaction; answer only after COMMIT.
    let result;
    try {
      result = await creditOnce(eventId, ev);
    } catch (err) {
      if (PERMANENT_DB_ERRORS.has(err.code)) {
        outcome = `refused by the database: ${err.code} ${err.message} (rolled back)`;
        answer(422, { error: 'cannot credit this payment' });
      } else {
        outcome = `database error: ${err.code || ''} ${err.message} (rolled back, provider will retry)`.replace('  ', ' ');
        answer(503, { error: 'temporarily unable to process, deliver again' });
      }
      return;
    }
    switch (result.kind) {
      case 'credited':
        outcome = `credited: deposit ${result.depositId}, account ${ev.account} balance now ${result.balance} kobo (committed)`;
        answer(200, { ok: true, status: 'credited' });
        break;
      case 'duplicate':
        outcome = `duplicate: ${result.by} already recorded, nothing credited`;
        answer(MISTAKE === 'duplicate-not-acked' ? 409 : 200, { ok: true, status: 'already processed' });
        break;
      case 'ignored-older':
        outcome = `ignored: older than newest processed event (${result.newest}), nothing credited`;
        answer(200, { ok: true, status: 'ignored' });
        break;
      case 'no-account':
        outcome = `refused: account ${ev.account} does not exist, nothing written`;
        answer(422, { error: 'no such account' });
        break;
    }
  } catch (err) {
    outcome = `internal error: ${err.message}`;
    answer(500, { error: 'internal error' });
  } finally {
    clearTimeout(deadline);
    const a = answered
      ? `answered ${answered.status} after ${answered.ms}ms${answered.why === 'deadline' ? ' (deadline; work went on)' : ''}`
      : 'no answer (connection gone)';
    log(`delivery ${facts.join(' ')} -> ${outcome}; ${a}; done after ${Date.now() - started}ms`);
  }
}

const server = http.createServer((req, res) => {
  const path = (req.url || '').split('?')[0];
  if (path !== PATH) {
    log(`request ${req.method} ${path} -> 404`);
    res.writeHead(404, { 'Content-Type': 'application/json' }).end('{"error":"not found"}');
    req.resume();
    return;
  }
  if (req.method !== 'POST') {
    log(`request ${req.method} ${path} -> 405`);
    res.writeHead(405, { Allow: 'POST', 'Content-Type': 'application/json' }).end('{"error":"method not allowed"}');
    req.resume();
    return;
  }
  handleDelivery(req, res);
});
server.requestTimeout = 10000;
server.headersTimeout = 10000;

// ---------------------------------------------------------------- start / stop

async function start() {
  const t0 = Date.now();
  for (;;) {
    try {
      await ensureSchema();
      break;
    } catch (err) {
      if (Date.now() - t0 > 15000) fatal(`database not ready: ${err.message}`);
      log(`database not ready yet (${err.message}); retrying`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  server.on('error', (err) => fatal(`cannot listen on ${HOST}:${PORT}: ${err.message}`));
  server.listen(Number(PORT), HOST, () => {
    log(`listening on http://${HOST}:${PORT}${PATH}${MISTAKE ? ` (CONSUMER_MISTAKE=${MISTAKE})` : ''}`);
  });
}

function stop(signal) {
  log(`${signal}: closing`);
  server.close();
  server.closeIdleConnections?.();
  setTimeout(() => process.exit(0), 3000).unref();
  pool.end().finally(() => process.exit(0));
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));

start();
