// A transfer server in Node.js that bank grade passes: the lesson's API
// written a second time, in another language, to show that the grader
// holds any server to the same contract (bank grade --contract).
//
//   npm ci && bank grade -- node server.js
//
// It takes DATABASE_URL, PORT and LOCK_TTL_MS from its environment, as
// bank grade gives them. Keys are claimed in a statement of their own that
// commits at once (so a copy sees the claim and gets 409), and completed
// in the transfer's own transaction, guarded by the claim's lock id.
import { createHash, randomUUID } from "node:crypto";
import http from "node:http";
import pg from "pg";

const lockTTLms = Number(process.env.LOCK_TTL_MS ?? 30_000);
const port = Number(process.env.PORT ?? 8080);
const maxBody = 16 * 1024;
const users = new Map([["token-ada", 1], ["token-bola", 2], ["token-chidi", 3]]);

if (!process.env.DATABASE_URL) {
  console.error("server.js: set DATABASE_URL to the bank's database (bank grade does)");
  process.exit(2);
}
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
pool.on("error", (err) => console.error("idle connection lost:", err.message));

// Two copies of this server may start at once on one database: the
// advisory lock lets one create the key table while the other waits.
async function createKeyTable() {
  await inTransaction(async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock(20260924)");
    await tx.query(`CREATE TABLE IF NOT EXISTS idempotency_keys (
      user_id integer NOT NULL,
      key text NOT NULL,
      request_hash text NOT NULL,
      status text NOT NULL CHECK (status IN ('in_progress', 'completed')),
      lock_id text,
      locked_until timestamptz,
      response_status integer,
      response_body jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (user_id, key))`);
    await tx.query("CREATE INDEX IF NOT EXISTS idempotency_keys_created_at ON idempotency_keys (created_at)");
  });
}

async function inTransaction(work) {
  const tx = await pool.connect();
  try {
    await tx.query("BEGIN");
    const result = await work(tx);
    await tx.query("COMMIT");
    return result;
  } catch (err) {
    await tx.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    tx.release();
  }
}

const answer = (status, body) => ({ status, body });
const refuse = (status, error, message) => answer(status, { error, message });

// sorted writes JSON with every object's keys in order, so the same
// request written with its keys in another order has the same fingerprint.
function sorted(value) {
  if (Array.isArray(value)) return `[${value.map(sorted).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const fields = Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${sorted(value[k])}`);
    return `{${fields.join(",")}}`;
  }
  return JSON.stringify(value);
}

const fingerprint = (body) => createHash("sha256").update(`POST /transfers ${sorted(body)}`).digest("hex");

// claim returns what to do with a request's key: run it (with a fresh
// lock id), or answer at once (a replay, 409, or 422 for a reused key).
async function claim(userId, key, hash) {
  for (;;) {
    const lockId = randomUUID();
    const mine = await pool.query(
      `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at)
       VALUES ($1, $2, $3, 'in_progress', $4, clock_timestamp() + $5 * interval '1 millisecond', clock_timestamp())
       ON CONFLICT (user_id, key) DO NOTHING RETURNING key`,
      [userId, key, hash, lockId, lockTTLms],
    );
    if (mine.rowCount === 1) return { run: true, lockId };

    const { rows: [held] } = await pool.query(
      "SELECT request_hash, status, response_status, response_body FROM idempotency_keys WHERE user_id = $1 AND key = $2",
      [userId, key],
    );
    if (!held) continue; // released by a request that failed: claim it again
    if (held.request_hash !== hash) {
      return { answer: refuse(422, "idempotency_key_reused", "this Idempotency-Key was sent with a different request") };
    }
    if (held.status === "completed") {
      return { answer: answer(held.response_status, held.response_body), replayed: true };
    }
    // In progress: take it over only if its holder's lock has expired.
    const taken = await pool.query(
      `UPDATE idempotency_keys SET lock_id = $3, locked_until = clock_timestamp() + $4 * interval '1 millisecond'
       WHERE user_id = $1 AND key = $2 AND status = 'in_progress' AND locked_until < clock_timestamp() RETURNING key`,
      [userId, key, lockId, lockTTLms],
    );
    if (taken.rowCount === 1) return { run: true, lockId };
    return { answer: refuse(409, "request_in_progress", "an earlier copy of this request is still being processed; retry shortly") };
  }
}

// transfer moves the money inside tx, or returns the bank's refusal.
async function transfer(tx, userId, { from, to, amountKobo }) {
  if (![from, to].every(Number.isSafeInteger)) return refuse(400, "invalid_account", "from and to must be account numbers");
  if (!Number.isSafeInteger(amountKobo) || amountKobo <= 0) {
    return refuse(400, "invalid_amount", "amountKobo must be a whole number of kobo above 0");
  }
  if (from === to) return refuse(422, "same_account", "a transfer needs two different accounts");

  // Both rows locked in one statement, in id order: two transfers in
  // opposite directions then queue instead of deadlocking.
  const { rows } = await tx.query(
    "SELECT id, owner_id, status FROM accounts WHERE id = ANY($1::int[]) ORDER BY id FOR UPDATE",
    [[from, to]],
  );
  const sender = rows.find((r) => r.id === from);
  const recipient = rows.find((r) => r.id === to);
  if (!sender || sender.owner_id !== userId) return refuse(404, "account_not_found", `account ${from} was not found`);
  if (sender.status !== "active") return refuse(422, "account_not_active", `account ${from} is ${sender.status}`);
  if (!recipient || recipient.status !== "active") {
    return refuse(422, "recipient_unavailable", `account ${to} cannot receive transfers`);
  }
  const debit = await tx.query(
    "UPDATE accounts SET balance_kobo = balance_kobo - $1 WHERE id = $2 AND balance_kobo >= $1 RETURNING balance_kobo",
    [amountKobo, from],
  );
  if (debit.rowCount === 0) return refuse(422, "insufficient_funds", "the balance is too low for this transfer");
  await tx.query("UPDATE accounts SET balance_kobo = balance_kobo + $1 WHERE id = $2", [amountKobo, to]);
  const { rows: [made] } = await tx.query(
    "INSERT INTO transfers (from_account, to_account, amount_kobo) VALUES ($1, $2, $3) RETURNING id",
    [from, to, amountKobo],
  );
  return answer(201, { transferId: made.id, from, to, amountKobo, balanceKobo: Number(debit.rows[0].balance_kobo) });
}

class LockLost extends Error {}

async function handleTransfer(userId, key, body) {
  if (typeof key !== "string" || !/^[A-Za-z0-9_-]{16,64}$/.test(key)) {
    return refuse(400, "idempotency_key_required", "send an Idempotency-Key header of 16 to 64 letters, digits, - or _");
  }
  const claimed = await claim(userId, key, fingerprint(body));
  if (!claimed.run) return { ...claimed.answer, replayed: claimed.replayed };
  try {
    return await inTransaction(async (tx) => {
      const result = await transfer(tx, userId, body);
      // The fencing token: only the current holder of the lock may store
      // its answer. A holder that was taken over rolls back, transfer and all.
      const stored = await tx.query(
        `UPDATE idempotency_keys SET status = 'completed', response_status = $4, response_body = $5::jsonb,
           lock_id = NULL, locked_until = NULL
         WHERE user_id = $1 AND key = $2 AND lock_id = $3 RETURNING key`,
        [userId, key, claimed.lockId, result.status, JSON.stringify(result.body)],
      );
      if (stored.rowCount === 0) throw new LockLost("lost the idempotency lock; rolling back");
      return result;
    });
  } catch (err) {
    // Nothing was stored: free the key (if it is still ours) so a retry can run it.
    await pool.query("DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND lock_id = $3", [userId, key, claimed.lockId])
      .catch(() => {});
    throw err;
  }
}

async function lookup(userId, key) {
  const { rows: [row] } = await pool.query(
    "SELECT status, response_status, response_body FROM idempotency_keys WHERE user_id = $1 AND key = $2",
    [userId, key ?? ""],
  );
  if (!row) return refuse(404, "key_not_found", "no request with this key was received, or it failed and may be sent again");
  if (row.status !== "completed") return answer(200, { key, status: row.status });
  return answer(200, { key, status: row.status, responseStatus: row.response_status, responseBody: row.response_body });
}

// readBody reads at most maxBody bytes; undefined when there were more.
async function readBody(req) {
  let text = "";
  for await (const chunk of req) {
    text += chunk;
    if (text.length > maxBody) return undefined;
  }
  return text;
}

// parseTransfer accepts one JSON object with the transfer's fields only.
function parseTransfer(text) {
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  const known = new Set(["from", "to", "amountKobo"]);
  if (body === null || typeof body !== "object" || Array.isArray(body)) return undefined;
  return Object.keys(body).every((k) => known.has(k)) ? body : undefined;
}

async function route(req) {
  const url = new URL(req.url, "http://localhost");
  if (url.pathname === "/healthz") return answer(200, { status: "ok" });
  const userId = users.get((req.headers.authorization ?? "").replace(/^Bearer /, ""));
  if (url.pathname !== "/transfers") return refuse(404, "not_found", "no such endpoint");
  if (userId === undefined) return refuse(401, "unauthorized", "send Authorization: Bearer token-ada (or token-bola, token-chidi)");
  if (req.method === "GET") return lookup(userId, url.searchParams.get("key"));
  if (req.method !== "POST") return { ...refuse(405, "method_not_allowed", "use POST"), allow: "GET, POST" };
  const text = await readBody(req);
  if (text === undefined) return refuse(413, "body_too_large", `the body must be at most ${maxBody} bytes`);
  const body = parseTransfer(text);
  if (body === undefined) return refuse(400, "invalid_json", "send one JSON object with from, to and amountKobo");
  return handleTransfer(userId, req.headers["idempotency-key"], body);
}

const server = http.createServer(async (req, res) => {
  let result;
  try {
    result = await route(req);
  } catch (err) {
    console.error(`${req.method} ${req.url}: ${err.message}`);
    result = refuse(500, "internal_error", "the transfer did not happen; retry with the same Idempotency-Key");
  }
  const headers = { "Content-Type": "application/json" };
  if (result.replayed) headers["Idempotent-Replayed"] = "true";
  if (result.status === 409) headers["Retry-After"] = "1";
  if (result.allow) headers.Allow = result.allow;
  res.writeHead(result.status, headers).end(JSON.stringify(result.body));
});

function stop() {
  server.close(() => pool.end().then(() => process.exit(0)));
  server.closeIdleConnections();
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

await createKeyTable();
server.listen(port, "127.0.0.1", () => console.error(`listening on 127.0.0.1:${port}`));
