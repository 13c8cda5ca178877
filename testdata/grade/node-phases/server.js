// node-phases: the lesson's transfer API with idempotency keys kept in
// "atomic phases with recovery points" (Brandur Leach's rocket-rides-atomic,
// Stripe-style keys). Every key row walks started -> transfer_created -> finished.
//   Phase 1, its own transaction: claim the (user, key) row with INSERT ... ON
//     CONFLICT DO NOTHING (fingerprint, lock_id, locked_until = now + LOCK_TTL_MS),
//     or find it: replay if finished, 422 if the fingerprint differs, 409 while
//     its lock is valid, take it over once the lock has expired.
//   Phase 2, one transaction: the transfer (debit, credit, transfers row) and,
//     as its fencing check, the key moved to 'transfer_created' with the transfer
//     id WHERE lock_id is still ours; no row means we lost the lock: roll back.
//     A business refusal is stored as the key's final answer in this same step.
//   Phase 3, a later transaction: the response (built from the stored transfer
//     id) written, recovery_point = 'finished', lock released. A retry that finds
//     'transfer_created' (crash, or an expired lock) resumes here, never transfers
//     again. 5xx answers are never stored (the claim is deleted). Not a broken mode.
"use strict";

const http = require("node:http");
const { createHash, randomUUID } = require("node:crypto");
const { Pool } = require("pg");

const PORT = Number(process.env.PORT || 8080);
const LOCK_TTL_MS = Number(process.env.LOCK_TTL_MS || 30000);
const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
pool.on("error", (err) => console.error("idle client error:", err.message));

const TOKENS = { "token-ada": 1, "token-bola": 2, "token-chidi": 3 };
const KEY_RE = /^[A-Za-z0-9_-]{16,64}$/;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS idempotency_keys (
    user_id         integer     NOT NULL,
    key             text        NOT NULL,
    request_hash    text        NOT NULL,
    request_params  jsonb       NOT NULL,
    recovery_point  text        NOT NULL
                    CHECK (recovery_point IN ('started', 'transfer_created', 'finished')),
    lock_id         uuid,
    locked_until    timestamptz,
    transfer_id     integer,
    response_status integer,
    response_body   jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, key)
  );
  CREATE INDEX IF NOT EXISTS idempotency_keys_created_at ON idempotency_keys (created_at);`;

// ---------- helpers ----------

class LostLock extends Error {}

function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

const fingerprint = (method, path, body) =>
  createHash("sha256").update(`${method} ${path} ${canonical(body)}`).digest("hex");

const problem = (status, error, message) => ({ status, body: { error, message } });

async function inTransaction(fn) {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => { broken = true; });
    throw err;
  } finally {
    client.release(broken);
  }
}

// The Idempotency-Key header: bare (the lesson's) or an RFC 8941 String (the
// IETF draft's), one key either way; two lines or anything else is a 400.
function readKey(req) {
  const lines = req.headersDistinct["idempotency-key"];
  if (!lines || lines.length === 0 || lines[0].trim() === "") {
    return { error: problem(400, "idempotency_key_required", "Send an Idempotency-Key header of 16 to 64 letters, digits, - or _") };
  }
  if (lines.length > 1) return { error: problem(400, "idempotency_key_invalid", "Send exactly one Idempotency-Key header") };
  let value = lines[0].trim();
  const quoted = /^"([^"\\]*)"(;.*)?$/.exec(value);
  if (quoted) value = quoted[1];
  if (!KEY_RE.test(value)) {
    return { error: problem(400, "idempotency_key_invalid", "An Idempotency-Key is 16 to 64 letters, digits, - or _") };
  }
  return { key: value };
}

// ---------- the transfer itself (runs inside phase 2's transaction) ----------

async function transfer(tx, userId, { from, to, amountKobo }) {
  if (![from, to].every(Number.isSafeInteger)) return problem(400, "invalid_account", "from and to must be account numbers");
  if (!Number.isSafeInteger(amountKobo) || amountKobo <= 0) {
    return problem(400, "invalid_amount", "amountKobo must be a whole number of kobo above 0");
  }
  if (from === to) return problem(422, "same_account", "You cannot transfer to the same account");

  // Lock both rows in id order, so opposite transfers cannot deadlock.
  const { rows } = await tx.query(
    "SELECT id, owner_id, status FROM accounts WHERE id = ANY($1::int[]) ORDER BY id FOR UPDATE",
    [[from, to]],
  );
  const sender = rows.find((r) => r.id === from);
  const recipient = rows.find((r) => r.id === to);
  if (!sender || sender.owner_id !== userId) return problem(404, "account_not_found", `Account ${from} was not found`);
  if (sender.status !== "active") return problem(422, "account_not_active", `Account ${from} is ${sender.status}`);
  if (!recipient || recipient.status !== "active") {
    return problem(422, "recipient_unavailable", `Account ${to} cannot receive transfers`);
  }
  const debit = await tx.query(
    "UPDATE accounts SET balance_kobo = balance_kobo - $1 WHERE id = $2 AND balance_kobo >= $1 RETURNING balance_kobo",
    [amountKobo, from],
  );
  if (debit.rows.length === 0) return problem(422, "insufficient_funds", "The balance is too low for this transfer");
  await tx.query("UPDATE accounts SET balance_kobo = balance_kobo + $1 WHERE id = $2", [amountKobo, to]);
  const { rows: [record] } = await tx.query(
    "INSERT INTO transfers (from_account, to_account, amount_kobo) VALUES ($1, $2, $3) RETURNING id",
    [from, to, amountKobo],
  );
  return { transferId: record.id };
}

// ---------- the three phases ----------

// Phase 1: claim the key, or say what the caller gets instead.
async function phase1(userId, key, hash, params, tries = 3) {
  const lockId = randomUUID();
  const ttl = `${LOCK_TTL_MS} milliseconds`;
  const claimed = await pool.query(
    `INSERT INTO idempotency_keys (user_id, key, request_hash, request_params, recovery_point, lock_id, locked_until)
     VALUES ($1, $2, $3, $4, 'started', $5, clock_timestamp() + $6::interval)
     ON CONFLICT (user_id, key) DO NOTHING RETURNING recovery_point`,
    [userId, key, hash, JSON.stringify(params), lockId, ttl],
  );
  if (claimed.rows.length === 1) return { action: "run", point: "started", lockId };

  const row = await readRow(userId, key);
  if (row && row.request_hash !== hash) {
    return { action: "respond", ...problem(422, "idempotency_key_reused", "This Idempotency-Key was sent with a different request") };
  }
  if (!row && tries > 1) return phase1(userId, key, hash, params, tries - 1); // its holder just gave it up
  if (!row || row.recovery_point === "finished") return settled(row);

  // Take over a key whose lock has expired (its holder crashed or stalled).
  const taken = await pool.query(
    `UPDATE idempotency_keys SET lock_id = $3, locked_until = clock_timestamp() + $4::interval
     WHERE user_id = $1 AND key = $2 AND recovery_point <> 'finished'
       AND (locked_until IS NULL OR locked_until < clock_timestamp())
     RETURNING recovery_point, transfer_id`,
    [userId, key, lockId, ttl],
  );
  if (taken.rows.length === 1) {
    const { recovery_point: point, transfer_id: transferId } = taken.rows[0];
    return { action: "run", point, lockId, transferId };
  }
  return settled(await readRow(userId, key));
}

async function readRow(userId, key) {
  const { rows: [row] } = await pool.query(
    `SELECT request_hash, recovery_point, transfer_id, response_status, response_body
     FROM idempotency_keys WHERE user_id = $1 AND key = $2`,
    [userId, key],
  );
  return row;
}

// What a request that does not hold the key answers: the stored answer, or 409.
function settled(row) {
  if (row && row.recovery_point === "finished") {
    return { action: "respond", status: row.response_status, body: row.response_body, replayed: true };
  }
  if (!row) return { action: "respond", ...problem(503, "key_released", "The first attempt failed; retry") };
  return { action: "respond", ...problem(409, "request_in_progress", "This request is still being processed; retry shortly") };
}

// Phase 2: the transfer and the key's move to 'transfer_created', one commit.
// A refusal finishes the key in the same commit (no money moved).
async function phase2(userId, key, lockId, params) {
  return inTransaction(async (tx) => {
    const result = await transfer(tx, userId, params);
    const fenced = result.transferId !== undefined
      ? await tx.query(
        `UPDATE idempotency_keys SET recovery_point = 'transfer_created', transfer_id = $4
         WHERE user_id = $1 AND key = $2 AND lock_id = $3 AND recovery_point = 'started' RETURNING 1`,
        [userId, key, lockId, result.transferId])
      : await tx.query(
        `UPDATE idempotency_keys SET recovery_point = 'finished', response_status = $4, response_body = $5::jsonb,
           lock_id = NULL, locked_until = NULL
         WHERE user_id = $1 AND key = $2 AND lock_id = $3 AND recovery_point = 'started' RETURNING 1`,
        [userId, key, lockId, result.status, JSON.stringify(result.body)]);
    if (fenced.rows.length === 0) throw new LostLock("lost the idempotency lock; rolling back");
    return result;
  });
}

// Phase 3: build the answer from the stored transfer id, store it, finish.
async function phase3(userId, key, lockId, transferId) {
  return inTransaction(async (tx) => {
    const { rows: [t] } = await tx.query(
      "SELECT id, from_account, to_account, amount_kobo FROM transfers WHERE id = $1", [transferId]);
    const body = { transferId: t.id, from: t.from_account, to: t.to_account, amountKobo: Number(t.amount_kobo) };
    const done = await tx.query(
      `UPDATE idempotency_keys SET recovery_point = 'finished', response_status = 201, response_body = $4::jsonb,
         lock_id = NULL, locked_until = NULL
       WHERE user_id = $1 AND key = $2 AND lock_id = $3 AND recovery_point = 'transfer_created' RETURNING 1`,
      [userId, key, lockId, JSON.stringify(body)]);
    if (done.rows.length === 0) throw new LostLock("lost the idempotency lock before finishing");
    return { status: 201, body };
  });
}

async function handleTransfer(userId, key, params) {
  const hash = fingerprint("POST", "/transfers", params);
  const claim = await phase1(userId, key, hash, params);
  if (claim.action === "respond") return claim;
  const { lockId } = claim;
  let { point, transferId } = claim;
  const resumed = point === "transfer_created";
  try {
    if (point === "started") {
      const result = await phase2(userId, key, lockId, params);
      if (result.transferId === undefined) return result; // a refusal, stored and final
      transferId = result.transferId;
      point = "transfer_created";
    }
    const answer = await phase3(userId, key, lockId, transferId);
    return { ...answer, replayed: resumed };
  } catch (err) {
    if (err instanceof LostLock) return settled(await readRow(userId, key).catch(() => undefined));
    if (point === "started") {
      // Nothing moved: drop our claim so nothing is stored and a retry runs anew.
      await pool.query("DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND lock_id = $3 AND recovery_point = 'started'",
        [userId, key, lockId]).catch(() => {});
    } else {
      // The transfer is committed: release the lock so a retry resumes phase 3 at once.
      await pool.query("UPDATE idempotency_keys SET lock_id = NULL, locked_until = NULL WHERE user_id = $1 AND key = $2 AND lock_id = $3",
        [userId, key, lockId]).catch(() => {});
    }
    throw err;
  }
}

// ---------- HTTP ----------

function send(res, { status, body, replayed, headers = {} }) {
  const h = { "Content-Type": "application/json", ...headers };
  if (replayed) h["Idempotent-Replayed"] = "true";
  if (status === 409 || status === 503) h["Retry-After"] = "1";
  if (status === 201 && body && body.transferId !== undefined) h.Location = `/transfers/${body.transferId}`;
  res.writeHead(status, h).end(JSON.stringify(body));
}

function dbFailure(err) {
  const code = String(err.code || "");
  const unreachable = code.startsWith("08") || code.startsWith("57P") || /ECONN|ETIMEDOUT|terminat|Connection/i.test(err.message);
  if (unreachable) return { ...problem(503, "database_unavailable", "The database cannot be reached; retry shortly"), headers: { "Retry-After": "1" } };
  return problem(500, "internal_error", "Something went wrong; retry with the same Idempotency-Key");
}

async function readBody(req) {
  let text = "";
  for await (const chunk of req) text += chunk;
  return text;
}

async function route(req, res) {
  const url = new URL(req.url, "http://localhost");
  if (req.method === "GET" && url.pathname === "/healthz") {
    await pool.query("SELECT 1");
    return send(res, { status: 200, body: { ok: true } });
  }
  const auth = /^Bearer (.+)$/.exec(req.headers.authorization || "");
  const userId = auth ? TOKENS[auth[1].trim()] : undefined;

  if (url.pathname === "/transfers" && req.method === "POST") {
    if (userId === undefined) return send(res, problem(401, "unauthorized", "Send a valid bearer token"));
    const { key, error } = readKey(req);
    if (error) return send(res, error);
    let params;
    try {
      params = JSON.parse(await readBody(req));
    } catch {
      return send(res, problem(400, "invalid_json", "The body must be JSON"));
    }
    if (params === null || typeof params !== "object" || Array.isArray(params)) {
      return send(res, problem(400, "invalid_body", 'The body must be {"from":N,"to":N,"amountKobo":N}'));
    }
    return send(res, await handleTransfer(userId, key, params));
  }

  if (url.pathname === "/transfers" && req.method === "GET") {
    if (userId === undefined) return send(res, problem(401, "unauthorized", "Send a valid bearer token"));
    let key = url.searchParams.get("key") || "";
    const quoted = /^"(.*)"$/.exec(key);
    if (quoted) key = quoted[1];
    const row = KEY_RE.test(key) ? await readRow(userId, key) : undefined;
    if (!row) return send(res, problem(404, "key_not_found", "You never sent this Idempotency-Key"));
    const body = { key, status: row.recovery_point === "finished" ? "completed" : "in_progress", recoveryPoint: row.recovery_point };
    if (row.transfer_id !== null) body.transferId = row.transfer_id;
    if (row.recovery_point === "finished") Object.assign(body, { responseStatus: row.response_status, responseBody: row.response_body });
    return send(res, { status: 200, body });
  }

  const one = /^\/transfers\/(\d{1,9})$/.exec(url.pathname);
  if (one && req.method === "GET") {
    if (userId === undefined) return send(res, problem(401, "unauthorized", "Send a valid bearer token"));
    const { rows: [t] } = await pool.query(
      `SELECT t.id, t.from_account, t.to_account, t.amount_kobo FROM transfers t
       JOIN accounts a ON a.id = t.from_account WHERE t.id = $1 AND a.owner_id = $2`, [Number(one[1]), userId]);
    if (!t) return send(res, problem(404, "transfer_not_found", "No such transfer"));
    return send(res, { status: 200, body: { transferId: t.id, from: t.from_account, to: t.to_account, amountKobo: Number(t.amount_kobo) } });
  }
  return send(res, problem(404, "not_found", "No such route"));
}

const server = http.createServer((req, res) => {
  route(req, res).catch((err) => {
    console.error(`${req.method} ${req.url}:`, err.message);
    if (!res.headersSent) send(res, dbFailure(err));
    else res.destroy();
  });
});

async function main() {
  // Two instances may start at once on one database: serialize the DDL.
  await inTransaction(async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('node-phases schema'))");
    await tx.query(SCHEMA);
  });
  server.listen(PORT, "127.0.0.1", () => console.log(`node-phases listening on 127.0.0.1:${PORT}, lock TTL ${LOCK_TTL_MS} ms`));
}

process.on("SIGTERM", () => {
  server.close();
  server.closeIdleConnections();
  const quit = () => pool.end().catch(() => {}).finally(() => process.exit(0));
  server.on("close", quit);
  setTimeout(() => process.exit(0), 2000).unref();
});

main().catch((err) => {
  console.error("start-up failed:", err.message);
  process.exit(1);
});
