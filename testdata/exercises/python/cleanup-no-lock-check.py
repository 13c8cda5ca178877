# Wrong on purpose: deletes by age alone, so a key whose lock is still
# valid goes too.
import os
from datetime import datetime, timedelta, timezone

import psycopg

db = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
now = datetime(2026, 9, 24, 3, 0, 0, tzinfo=timezone.utc)
db.execute(
    """INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at) VALUES
   (1, 'old-completed', 'h', 'completed', NULL, NULL, %(a)s),
   (1, 'new-completed', 'h', 'completed', NULL, NULL, %(b)s),
   (1, 'old-stuck', 'h', 'in_progress', 'lock-1', %(c)s, %(a)s)""",
    {"a": now - timedelta(hours=48), "b": now - timedelta(hours=1), "c": now - timedelta(hours=47)},
)
deleted = db.execute("DELETE FROM idempotency_keys WHERE created_at < %s RETURNING key", [now - timedelta(hours=24)]).fetchall()
print("deleted:", [r[0] for r in deleted])
print("kept:", [r[0] for r in db.execute("SELECT key FROM idempotency_keys").fetchall()])
db.close()
