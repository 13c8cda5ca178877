// Wrong on purpose: a shipped order matches the UPDATE again, so the
// second call says "shipped" as if it shipped it twice.
import pg from "pg";

const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
await db.connect();

async function markShipped(orderId) {
  const changed = await db.query("UPDATE orders SET status = 'shipped' WHERE id = $1 AND status IN ('paid', 'shipped') RETURNING id", [orderId]);
  if (changed.rows.length === 1) return "shipped";
  const { rows: [order] } = await db.query("SELECT status FROM orders WHERE id = $1", [orderId]);
  return `error: order is ${order?.status ?? "missing"}`;
}

for (const id of [1, 1, 2, 3]) console.log(await markShipped(id));
await db.end();
