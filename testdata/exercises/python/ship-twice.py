# Wrong on purpose: a shipped order matches the UPDATE again, so the second
# call says "shipped" as if it shipped it twice.
import os

import psycopg

db = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)


def mark_shipped(order_id):
    changed = db.execute("UPDATE orders SET status = 'shipped' WHERE id = %s AND status IN ('paid', 'shipped') RETURNING id", [order_id]).fetchall()
    if changed:
        return "shipped"
    order = db.execute("SELECT status FROM orders WHERE id = %s", [order_id]).fetchone()
    return f"error: order is {order[0] if order else 'missing'}"


for order_id in (1, 1, 2, 3):
    print(mark_shipped(order_id))
db.close()
