# The lesson's ship.js in Python, with psycopg 3 for PGlite. The lab has
# created orders with (1, 'paid') and (2, 'cancelled'), so the CREATE TABLE
# and INSERT are left out.
import os

import psycopg

db = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)


def mark_shipped(order_id):
    changed = db.execute("UPDATE orders SET status = 'shipped' WHERE id = %s AND status = 'paid' RETURNING id", [order_id]).fetchall()
    if len(changed) == 1:
        return "shipped"
    order = db.execute("SELECT status FROM orders WHERE id = %s", [order_id]).fetchone()
    if order and order[0] == "shipped":
        return "already shipped (ok)"
    return f"error: order is {order[0] if order else 'missing'}"


print(mark_shipped(1))
print(mark_shipped(1))
print(mark_shipped(2))
print(mark_shipped(3))
db.close()
