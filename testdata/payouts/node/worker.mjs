// Payout worker: drains payout_outbox, paying each row once through the rail.
//
// Design (see README.md): a lease. The worker adds two columns of its own
// (claimed_by, claimed_until) and claims one row at a time with a single
// UPDATE ... RETURNING that also stores the row's reference (the database's
// reference prefix + the row id), so the reference is committed before the
// first POST. The rail is called outside any transaction, with
// AbortSignal.timeout(RAIL_TIMEOUT_MS); the row is marked done in a statement
// of its own, only after the rail said "paid" (201, or GET -> paid).
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

const MISTAKES = ['reference-not-stored', 'done-before-rail', 'no-backoff'];
const MISTAKE = process.env.WORKER_MISTAKE || '';

const DATABASE_URL = process.env.DATABASE_URL;
const RAIL_URL = (process.env.RAIL_URL || '').replace(/\/+$/, '');
const RAIL_TIMEOUT_MS = Number.parseInt(process.env.RAIL_TIMEOUT_MS || '1000', 10);

const POLL_MS = 250; // look for new rows at least this often when idle
const MAX_WAIT_MS = 1000; // longest wait between two tries of a rail that is down
// A lease outlives one rail request (RAIL_TIMEOUT_MS) plus one wait between
// tries plus some slack; it is renewed before every request.
const LEASE_MS = RAIL_TIMEOUT_MS + MAX_WAIT_MS + 2000;
const WORKER_ID = `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;

function log(msg) {
  process.stderr.write(`${new Date().toISOString()} worker[${process.pid}] ${msg}\n`);
}

if (MISTAKE && !MISTAKES.includes(MISTAKE)) {
  log(`unknown WORKER_MISTAKE=${JSON.stringify(MISTAKE)}; known: ${MISTAKES.join(', ')}`);
  process.exit(2);
}
if (!DATABASE_URL || !RAIL_URL || !(RAIL_TIMEOUT_MS > 0)) {
  log('DATABASE_URL, RAIL_URL and RAIL_TIMEOUT_MS (a positive number) must be set');
  process.exit(2);
}

// ---------------------------------------------------------------- stopping
let stopping = false;
let wakeSleeper = null;
function sleep(ms) {
  if (stopping) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      wakeSleeper = null;
      resolve();
    };
    const timer = setTimeout(done, ms);
    wakeSleeper = done;
  });
}
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    if (!stopping) log(`${sig}: stopping after the current step`);
    stopping = true;
    if (wakeSleeper) wakeSleeper();
  });
}

// ---------------------------------------------------------------- database
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2, application_name: 'payout-worker' });
pool.on('error', (err) => log(`database: idle connection lost: ${err.message}`));

// Adds the worker's own columns and settings; returns the reference prefix of
// this database. Serialised by an advisory lock so that two workers starting
// together do not race on the DDL.
async function setUp() {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('payout-worker setup'))`);
    const { rows } = await client.query(
      `SELECT count(*)::int AS n FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = 'payout_outbox'
          AND column_name IN ('claimed_by', 'claimed_until')`,
    );
    if (rows[0].n < 2) {
      await client.query(
        `ALTER TABLE payout_outbox
           ADD COLUMN IF NOT EXISTS claimed_by text,
           ADD COLUMN IF NOT EXISTS claimed_until timestamptz`,
      );
    }
    await client.query(
      `CREATE TABLE IF NOT EXISTS payout_worker_settings (name text PRIMARY KEY, value text NOT NULL)`,
    );
    // The prefix is chosen once per database and kept: references are then
    // 'payout-<prefix>-<id>', the same for a row on every attempt and every run,
    // and unlike any other database's rows that may reach the same rail.
    await client.query(
      `INSERT INTO payout_worker_settings (name, value) VALUES ('reference_prefix', $1)
       ON CONFLICT (name) DO NOTHING`,
      [`payout-${randomBytes(4).toString('hex')}-`],
    );
    const prefix = await client.query(
      `SELECT value FROM payout_worker_settings WHERE name = 'reference_prefix'`,
    );
    await client.query('COMMIT');
    return prefix.rows[0].value;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

let referencePrefix = null;
const refused = new Set(); // rows the rail refused (422): not sent again by this run

// Claims one pending row whose lease is free (or already ours), storing its
// reference in the same statement. earlier_reference is the reference the row
// had before this claim: when set, the reference may have been sent already.
let claimSet = `claimed_by = $1, claimed_until = now() + $2 * interval '1 millisecond'`;
if (MISTAKE !== 'reference-not-stored') claimSet += `, reference = COALESCE(p.reference, $4 || p.id)`;
if (MISTAKE === 'done-before-rail') claimSet += `, status = 'done'`;

async function claimRow() {
  const { rows } = await pool.query(
    `UPDATE payout_outbox AS p
        SET ${claimSet}
       FROM (SELECT id, reference FROM payout_outbox
              WHERE status = 'pending'
                AND (claimed_until IS NULL OR claimed_until < now() OR claimed_by = $1)
                AND id <> ALL ($3::int[])
              ORDER BY id
              LIMIT 1
              FOR UPDATE SKIP LOCKED) AS c
      WHERE p.id = c.id
  RETURNING p.id, p.account_id, p.amount_kobo, COALESCE(p.reference, $4 || p.id) AS reference,
            c.reference AS earlier_reference`,
    [WORKER_ID, LEASE_MS, [...refused], referencePrefix],
  );
  return rows[0] || null;
}

// Renews every lease this worker holds (the row in hand and the refused rows,
// which it keeps so that no other worker sends them while this run lives).
// Returns whether the lease on row id (if given) is still ours.
async function renewLeases(id) {
  const { rows } = await pool.query(
    `UPDATE payout_outbox SET claimed_until = now() + $2 * interval '1 millisecond'
      WHERE claimed_by = $1 RETURNING id`,
    [WORKER_ID, LEASE_MS],
  );
  return id === undefined || rows.some((r) => r.id === id);
}

async function markDone(row, why) {
  for (let wait = 100; ; wait = Math.min(wait * 2, MAX_WAIT_MS)) {
    try {
      await pool.query(
        `UPDATE payout_outbox
            SET status = 'done', reference = $2, claimed_by = NULL, claimed_until = NULL
          WHERE id = $1`,
        [row.id, row.reference],
      );
      log(`row ${row.id} reference=${row.reference} marked done (${why})`);
      return;
    } catch (err) {
      log(`row ${row.id}: could not mark done: ${err.message}`);
      if (stopping) {
        log(`row ${row.id}: left pending; the next run will ask the rail about ${row.reference}`);
        return;
      }
      await sleep(wait);
    }
  }
}

async function releaseLeases() {
  await pool.query(
    `UPDATE payout_outbox SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = $1`,
    [WORKER_ID],
  );
}

// ---------------------------------------------------------------- the rail
function describeError(err) {
  if (err && err.name === 'TimeoutError') return `no answer within ${RAIL_TIMEOUT_MS} ms`;
  const cause = err && err.cause;
  const code = cause && (cause.code || cause.message);
  return `no answer (${code || (err && err.message) || err})`;
}

// One request to the rail; one line on stderr. status is null when the rail
// gave no (complete) answer.
async function rail(method, path, bodyText, row) {
  const started = Date.now();
  let status = null;
  let body = null;
  let answer;
  try {
    const res = await fetch(RAIL_URL + path, {
      method,
      headers: bodyText ? { 'Content-Type': 'application/json' } : {},
      body: bodyText || undefined,
      signal: AbortSignal.timeout(RAIL_TIMEOUT_MS),
    });
    const text = await res.text(); // read under the same timeout
    status = res.status;
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
    answer = `${status} ${text.replace(/\s+/g, ' ').slice(0, 200)}`;
  } catch (err) {
    status = null;
    answer = describeError(err);
  }
  log(`rail ${method} ${path} row=${row.id} reference=${row.reference} -> ${answer} [${Date.now() - started} ms]`);
  return { status, body };
}

// Pays one claimed row. Returns when the row is done, refused, no longer ours,
// or the worker is stopping.
async function payRow(row) {
  // A reference that was there before this claim may have reached the rail:
  // ask about it before any POST.
  let mustAsk = row.earlier_reference != null;
  let wait = 0;
  for (;;) {
    if (stopping) return;
    if (!(await renewLeases(row.id))) {
      log(`row ${row.id}: lease lost to another worker; leaving it`);
      return;
    }
    if (mustAsk) {
      const a = await rail('GET', `/payouts/${encodeURIComponent(row.reference)}`, null, row);
      if (a.status === 200 && a.body && a.body.status === 'paid') {
        if (a.body.account !== row.account_id || String(a.body.amountKobo) !== String(row.amount_kobo)) {
          log(`row ${row.id}: rail reports ${row.reference} paid with account=${a.body.account} amountKobo=${a.body.amountKobo}, row has account=${row.account_id} amount_kobo=${row.amount_kobo}`);
        }
        await markDone(row, 'status enquiry: paid');
        return;
      }
      if (a.status === 404) {
        mustAsk = false; // never received: safe to send now
        continue;
      }
      // 5xx, no answer, or anything else: still unknown; ask again later
    } else {
      const a = await rail('POST', '/payouts', postBody(row), row);
      if (a.status === 201) {
        await markDone(row, 'rail answered 201 paid');
        return;
      }
      if (a.status === 422) {
        refused.add(row.id);
        log(`row ${row.id} reference=${row.reference} REFUSED by the rail (422 ${JSON.stringify(a.body)}): left pending, not sent again by this run`);
        return;
      }
      // 409, 5xx, no answer, anything else: the outcome is unknown; ask first
      mustAsk = true;
    }
    wait = wait ? Math.min(wait * 2, MAX_WAIT_MS) : 100;
    if (MISTAKE !== 'no-backoff') await sleep(wait);
  }
}

function postBody(row) {
  // amount_kobo is a bigint (a string from pg): write it as a JSON number
  // without passing through a float.
  return `{"reference":${JSON.stringify(row.reference)},"account":${Number(row.account_id)},"amountKobo":${BigInt(row.amount_kobo).toString()}}`;
}

// ---------------------------------------------------------------- main loop
async function main() {
  log(`starting: id=${WORKER_ID} rail=${RAIL_URL} timeout=${RAIL_TIMEOUT_MS}ms lease=${LEASE_MS}ms`);
  for (let wait = 200; !stopping; wait = Math.min(wait * 2, 2000)) {
    try {
      referencePrefix = await setUp();
      if (MISTAKE === 'reference-not-stored') referencePrefix = `payout-${randomBytes(4).toString('hex')}-`;
      break;
    } catch (err) {
      log(`set-up failed: ${err.message}; trying again`);
      await sleep(wait);
    }
  }
  while (!stopping) {
    let row = null;
    try {
      row = await claimRow();
      if (!row) {
        if (refused.size) await renewLeases();
        await sleep(POLL_MS);
        continue;
      }
      await payRow(row);
    } catch (err) {
      log(`${row ? `row ${row.id}: ` : ''}database error: ${err.message}`);
      await sleep(500);
    }
  }
  try {
    await releaseLeases();
  } catch (err) {
    log(`could not release leases (they expire in ${LEASE_MS} ms): ${err.message}`);
  }
  await pool.end().catch(() => {});
  log('stopped');
  process.exit(0);
}

main().catch((err) => {
  log(`fatal: ${err.stack || err}`);
  process.exit(1);
});
