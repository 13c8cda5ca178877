// A payment provider's webhook consumer, as a starter: it credits the
// account of every "payment received" delivery, and has no protection yet:
// no signature check, no record of the events, so every delivery of an
// event credits again. bank grade webhook passes "out-of-order" and fails
// the rest; the lines marked YOUR WORK are where the lesson goes.
//
// Run it the way bank grade webhook does:  bank grade webhook -- node consumer.js
'use strict';

const http = require('node:http');
const { Pool } = require('pg');

const PORT = Number(process.env.PORT);
// whsec_ and the base64 of the key the provider signs with.
const WEBHOOK_SECRET = process.env.WEBHOOK_SECRET;

const pool = new Pool({ connectionString: process.env.DATABASE_URL });
pool.on('error', (err) => console.error('idle database connection:', err.message));

async function createTables() {
  // YOUR WORK: create the table your consumer records the events it has
  // processed in (CREATE TABLE IF NOT EXISTS), with a unique key on the
  // event's id and one on its payment reference.
}

// The effect: the account credited, and its deposits row.
async function credit(client, payment, account, amountKobo) {
  await client.query('UPDATE accounts SET balance_kobo = balance_kobo + $1 WHERE id = $2', [amountKobo, account]);
  await client.query('INSERT INTO deposits (account_id, amount_kobo, source) VALUES ($1, $2, $3)', [account, amountKobo, payment]);
}

function answer(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function deliver(req, res, raw) {
  // YOUR WORK: verify the delivery first (webhook-id, webhook-timestamp
  // and webhook-signature, against WEBHOOK_SECRET), and refuse it with a
  // 4xx when it does not hold.
  let payment, account, amountKobo;
  try {
    const { data } = JSON.parse(raw);
    ({ payment, account, amountKobo } = data);
  } catch {
    return answer(res, 400, { error: 'not_an_event' });
  }
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // YOUR WORK: record the event here, in this same transaction, and
    // credit nothing when it (or its payment) is recorded already.
    await credit(client, payment, account, amountKobo);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    console.error('delivery failed:', err.message);
    return answer(res, 500, { error: 'internal_error' });
  } finally {
    client.release();
  }
  answer(res, 200, { credited: payment });
}

const server = http.createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/webhooks') return answer(res, 404, { error: 'not_found' });
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => deliver(req, res, Buffer.concat(chunks).toString('utf8')));
});

createTables().then(() => {
  server.listen(PORT, '127.0.0.1', () => console.log(`consumer listening on 127.0.0.1:${PORT}`));
});
