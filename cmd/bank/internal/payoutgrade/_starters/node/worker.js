// A payout worker, as a starter: it drains the payout outbox, paying each
// row through the rail, and has no protection yet: a new reference for
// every attempt, none stored in the row, no status enquiry, no claim on
// the row. bank grade payout passes "plain" and fails the rest; the lines
// marked YOUR WORK are where the lesson goes.
//
// Run it the way bank grade payout does:  bank grade payout -- node worker.js
'use strict';

const crypto = require('node:crypto');
const { Pool } = require('pg');

const RAIL_URL = process.env.RAIL_URL;
const RAIL_TIMEOUT_MS = Number(process.env.RAIL_TIMEOUT_MS || 1000);

const pool = new Pool({ connectionString: process.env.DATABASE_URL });
pool.on('error', (err) => console.error('idle database connection:', err.message));

// rail is the rail's answer: its status (0 for none).
async function rail(method, path, body) {
  try {
    const res = await fetch(RAIL_URL + path, {
      method,
      headers: { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(RAIL_TIMEOUT_MS),
    });
    await res.text();
    return res.status;
  } catch {
    return 0;
  }
}

async function drain() {
  // YOUR WORK: claim a row for as long as you work it (an advisory lock
  // held until it is done, or a lease), so that two workers never send
  // the same one.
  const { rows } = await pool.query("SELECT id, account_id, amount_kobo FROM payout_outbox WHERE status = 'pending' ORDER BY id");
  for (const row of rows) {
    // YOUR WORK: one reference per row, stored in the row (and committed)
    // before the first send, and the same on every attempt; after an
    // answer that does not say whether it was paid, ask GET
    // /payouts/REFERENCE before sending it again.
    const reference = 'payout-' + crypto.randomUUID();
    const status = await rail('POST', '/payouts', { reference, account: row.account_id, amountKobo: Number(row.amount_kobo) });
    console.error(`row ${row.id}: POST ${reference}: ${status}`);
    if (status === 201) {
      await pool.query("UPDATE payout_outbox SET status = 'done', reference = $1 WHERE id = $2", [reference, row.id]);
    }
  }
}

async function main() {
  for (;;) {
    await drain().catch((err) => console.error('drain failed:', err.message));
    await new Promise((r) => setTimeout(r, 200));
  }
}

main();
