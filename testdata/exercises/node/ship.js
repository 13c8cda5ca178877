// The lesson's ship.js, with PGlite swapped for pg. The lab has created
// orders with (1, 'paid') and (2, 'cancelled'), so the CREATE TABLE and
// INSERT are left out.
import pg from "pg";

const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
await db.connect();

async function markShipped(orderId) {
  const changed = await db.query("UPDATE orders SET status = 'shipped' WHERE id = $1 AND status = 'paid' RETURNING id", [orderId]);
  if (changed.rows.length === 1) return "shipped";
  const { rows: [order] } = await db.query("SELECT status FROM orders WHERE id = $1", [orderId]);
  if (order?.status === "shipped") return "already shipped (ok)";
  return `error: order is ${order?.status ?? "missing"}`;
}

console.log(await markShipped(1));
console.log(await markShipped(1));
console.log(await markShipped(2));
console.log(await markShipped(3));
await db.end();
