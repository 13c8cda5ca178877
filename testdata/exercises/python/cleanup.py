# The lesson's cleanup.js in Python, with psycopg 3 for PGlite: openBank()
# becomes a connection to the bank database the lab prepared. The rest is
# as written: it inserts its three keys, then runs its DELETE … RETURNING key.
import os
from datetime import datetime, timedelta, timezone

import psycopg

db = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
now = datetime(2026, 9, 24, 3, 0, 0, tzinfo=timezone.utc)


def hours_ago(h):
    return now - timedelta(hours=h)


db.execute(
    """INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at) VALUES
   (1, 'old-completed', 'h', 'completed', NULL, NULL, %(a)s),
   (1, 'new-completed', 'h', 'completed', NULL, NULL, %(b)s),
   (1, 'old-stuck', 'h', 'in_progress', 'lock-1', %(c)s, %(a)s)""",
    {"a": hours_ago(48), "b": hours_ago(1), "c": hours_ago(47)},
)

deleted = db.execute(
    """DELETE FROM idempotency_keys
   WHERE created_at < %s AND (status = 'completed' OR locked_until < %s)
   RETURNING key""",
    [hours_ago(24), now],
).fetchall()
print("deleted:", [r[0] for r in deleted])
rows = db.execute("SELECT key FROM idempotency_keys").fetchall()
print("kept:", [r[0] for r in rows])
db.close()
