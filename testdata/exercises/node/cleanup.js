// The lesson's cleanup.js, with PGlite swapped for pg: openBank() becomes
// a connection to the bank database the lab prepared. The rest is as
// written: it inserts its three keys, then runs its DELETE … RETURNING key.
import pg from "pg";

const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
await db.connect();
const now = new Date(Date.UTC(2026, 8, 24, 3, 0, 0));
const hoursAgo = (h) => new Date(now.getTime() - h * 3_600_000);
await db.query(
  `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at) VALUES
   (1, 'old-completed', 'h', 'completed', NULL, NULL, $1),
   (1, 'new-completed', 'h', 'completed', NULL, NULL, $2),
   (1, 'old-stuck', 'h', 'in_progress', 'lock-1', $3, $1)`,
  [hoursAgo(48), hoursAgo(1), hoursAgo(47)],
);

const deleted = await db.query(
  `DELETE FROM idempotency_keys
   WHERE created_at < $1 AND (status = 'completed' OR locked_until < $2)
   RETURNING key`,
  [hoursAgo(24), now],
);
console.log("deleted:", deleted.rows.map((r) => r.key));
const { rows } = await db.query("SELECT key FROM idempotency_keys");
console.log("kept:", rows.map((r) => r.key));
await db.end();
