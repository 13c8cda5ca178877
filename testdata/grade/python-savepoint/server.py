"""Transfer server with idempotency keys: the transfer inside a SAVEPOINT.

Design (correct, as the lesson teaches): the claim of (user, key) commits on its
own first (INSERT ... ON CONFLICT DO NOTHING, random lock_id, locked_until = now()
+ LOCK_TTL_MS). Then ONE outer transaction: the transfer runs in a nested
`with conn.transaction():` (a SAVEPOINT, as Django's nested atomic() makes); after
RELEASE, still in the outer transaction, the key row is completed with the answer,
fenced by `WHERE lock_id = mine` (zero rows: the whole transaction rolls back).
So the transfers row carries a subtransaction's xid, the key row its top-level
xid: one commit, all or nothing. Refusals (4xx) are stored and replayed; a 5xx is
never stored (the claim is deleted). Expired locks are taken over; 409 +
Retry-After: 1 while in progress.
STAMP_AFTER=1 (still correct): after the reply is sent, a separate later
transaction sets last_used_at = now() on the key row (bookkeeping only).
"""
import hashlib
import json
import os
import re
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import psycopg
from psycopg.types.json import Jsonb

DATABASE_URL = os.environ["DATABASE_URL"]
PORT = int(os.environ.get("PORT", "8080"))
LOCK_TTL_MS = int(os.environ.get("LOCK_TTL_MS", "30000"))
STAMP_AFTER = os.environ.get("STAMP_AFTER") == "1"
DB_SLOTS = threading.BoundedSemaphore(int(os.environ.get("DB_CONNECTIONS", "30")))

USERS = {"token-ada": 1, "token-bola": 2, "token-chidi": 3}
KEY_RE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
MAX_SAFE = 2**53 - 1

DDL = """
CREATE TABLE IF NOT EXISTS idempotency_keys (
  user_id integer NOT NULL,
  key text NOT NULL,
  request_hash text NOT NULL,
  status text NOT NULL CHECK (status IN ('in_progress', 'completed')),
  lock_id text,
  locked_until timestamptz,
  response_status integer,
  response_body jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  PRIMARY KEY (user_id, key)
)"""


class LockLost(Exception):
    """Completing the key found another lock_id: a takeover happened."""


def err(status, code, message):
    return status, {"error": code, "message": message}


def request_hash(body):
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"POST /transfers {canonical}".encode()).hexdigest()


def parse_key(values):
    """None when absent; raises ValueError for two lines or a bad value."""
    if not values:
        return None
    if len(values) > 1:
        raise ValueError("two Idempotency-Key lines")
    raw = values[0].strip()
    if raw.startswith('"'):
        end = raw.find('"', 1)
        if end < 0 or (raw[end + 1:] and not raw[end + 1:].lstrip().startswith(";")):
            raise ValueError("not one String")
        raw = raw[1:end]
    else:
        raw = raw.split(";", 1)[0].strip()
    return raw


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) <= MAX_SAFE


def transfer(conn, user_id, body):
    """The lesson's transfer; refusals are returned, not raised."""
    if not isinstance(body, dict):
        return err(400, "invalid_body", "The body must be a JSON object")
    src, dst, amount = body.get("from"), body.get("to"), body.get("amountKobo")
    if not (is_int(src) and is_int(dst)):
        return err(400, "invalid_account", "from and to must be account numbers")
    if not is_int(amount) or amount <= 0:
        return err(400, "invalid_amount", "amountKobo must be a whole number of kobo above 0")
    if src == dst:
        return err(422, "same_account", "You cannot transfer to the same account")
    sender = conn.execute("SELECT owner_id, status FROM accounts WHERE id = %s FOR UPDATE", (src,)).fetchone()
    if sender is None or sender[0] != user_id:
        return err(404, "account_not_found", f"Account {src} was not found")
    if sender[1] != "active":
        return err(422, "account_not_active", f"Account {src} is {sender[1]}")
    recipient = conn.execute("SELECT status FROM accounts WHERE id = %s", (dst,)).fetchone()
    if recipient is None or recipient[0] != "active":
        return err(422, "recipient_unavailable", f"Account {dst} cannot receive transfers")
    debit = conn.execute(
        "UPDATE accounts SET balance_kobo = balance_kobo - %s WHERE id = %s AND balance_kobo >= %s RETURNING balance_kobo",
        (amount, src, amount),
    ).fetchone()
    if debit is None:
        return err(422, "insufficient_funds", "The balance is too low for this transfer")
    conn.execute("UPDATE accounts SET balance_kobo = balance_kobo + %s WHERE id = %s", (amount, dst))
    (tid,) = conn.execute(
        "INSERT INTO transfers (from_account, to_account, amount_kobo) VALUES (%s, %s, %s) RETURNING id",
        (src, dst, amount),
    ).fetchone()
    return 201, {"transferId": tid, "from": src, "to": dst, "amountKobo": amount, "balanceKobo": debit[0]}


def begin_key(conn, user_id, key, fp):
    """Claim the key (autocommit: each statement commits on its own).
    Returns ("proceed", lock_id) | ("replay", status, body) | ("respond", status, body)."""
    lock_id = str(uuid.uuid4())
    for _ in range(3):
        claimed = conn.execute(
            """INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until)
               VALUES (%s, %s, %s, 'in_progress', %s, now() + %s * interval '1 millisecond')
               ON CONFLICT (user_id, key) DO NOTHING RETURNING key""",
            (user_id, key, fp, lock_id, LOCK_TTL_MS),
        ).fetchone()
        if claimed:
            return ("proceed", lock_id)
        row = conn.execute(
            "SELECT request_hash, status, response_status, response_body FROM idempotency_keys WHERE user_id = %s AND key = %s",
            (user_id, key),
        ).fetchone()
        if row is None:
            continue  # released by a failed attempt in between: claim again
        if row[0] != fp:
            return ("respond",) + err(422, "idempotency_key_reused", "This Idempotency-Key was sent with a different request")
        if row[1] == "completed":
            return ("replay", row[2], row[3])
        took = conn.execute(
            """UPDATE idempotency_keys SET lock_id = %s, locked_until = now() + %s * interval '1 millisecond'
               WHERE user_id = %s AND key = %s AND status = 'in_progress' AND locked_until < now() RETURNING key""",
            (lock_id, LOCK_TTL_MS, user_id, key),
        ).fetchone()
        if took:
            return ("proceed", lock_id)
        row = conn.execute(
            "SELECT status, response_status, response_body FROM idempotency_keys WHERE user_id = %s AND key = %s",
            (user_id, key),
        ).fetchone()
        if row is not None and row[0] == "completed":
            return ("replay", row[1], row[2])
        if row is not None:
            break
    return ("respond",) + err(409, "request_in_progress", "This request is still being processed; retry shortly")


def handle_transfer(conn, user_id, key, body):
    """Returns (status, body, extra_headers, touched_key)."""
    fp = request_hash(body)
    started = begin_key(conn, user_id, key, fp)
    if started[0] == "replay":
        return started[1], started[2], {"Idempotent-Replayed": "true"}, True
    if started[0] == "respond":
        extra = {"Retry-After": "1"} if started[1] == 409 else {}
        return started[1], started[2], extra, False
    lock_id = started[1]
    try:
        with conn.transaction():                  # BEGIN: the outer transaction
            with conn.transaction():              # SAVEPOINT: the transfer
                status, result = transfer(conn, user_id, body)
            # RELEASE SAVEPOINT done; still inside the outer transaction:
            done = conn.execute(
                """UPDATE idempotency_keys
                   SET status = 'completed', response_status = %s, response_body = %s,
                       lock_id = NULL, locked_until = NULL
                   WHERE user_id = %s AND key = %s AND lock_id = %s RETURNING key""",
                (status, Jsonb(result), user_id, key, lock_id),
            ).fetchone()
            if done is None:
                raise LockLost()                  # rolls the transfer back too
        return status, result, {}, True
    except LockLost:
        status, result = err(409, "request_in_progress", "This request was taken over by a retry; retry shortly")
        return status, result, {"Retry-After": "1"}, False
    except Exception:
        # Unexpected failure: nothing stored, give the key up so a retry runs.
        try:
            if not conn.closed:
                conn.execute(
                    "DELETE FROM idempotency_keys WHERE user_id = %s AND key = %s AND lock_id = %s",
                    (user_id, key, lock_id),
                )
        except Exception:
            pass  # the lock expires by itself
        raise


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send_json(self, status, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def user(self):
        auth = self.headers.get("Authorization", "")
        return USERS.get(auth[7:].strip()) if auth.startswith("Bearer ") else None

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def do_POST(self):
        text = self.read_body()
        if urlsplit(self.path).path != "/transfers":
            return self.send_json(404, {"error": "not_found", "message": "No such route"})
        user_id = self.user()
        if user_id is None:
            return self.send_json(401, {"error": "unauthorized", "message": "Send Authorization: Bearer <token>"})
        try:
            key = parse_key(self.headers.get_all("Idempotency-Key"))
        except ValueError as e:
            return self.send_json(400, {"error": "idempotency_key_invalid", "message": f"Idempotency-Key: {e}"})
        if key is None or not KEY_RE.match(key):
            return self.send_json(400, {"error": "idempotency_key_required",
                                        "message": "Send an Idempotency-Key header of 16 to 64 letters, digits, - or _"})
        try:
            body = json.loads(text)
        except ValueError:
            return self.send_json(400, {"error": "invalid_json", "message": "The body is not JSON"})
        self.with_db(lambda conn: self.post_transfer(conn, user_id, key, body))

    def post_transfer(self, conn, user_id, key, body):
        status, result, headers, touched = handle_transfer(conn, user_id, key, body)
        if status == 201 and isinstance(result, dict) and "transferId" in result:
            headers = dict(headers, Location=f"/transfers/{result['transferId']}")
        self.send_json(status, result, headers)
        if STAMP_AFTER and touched:
            # Harmless bookkeeping, in its own later transaction, after the reply.
            try:
                conn.execute("UPDATE idempotency_keys SET last_used_at = now() WHERE user_id = %s AND key = %s",
                             (user_id, key))
            except Exception as e:
                print(f"stamp failed: {e}", file=sys.stderr)

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path == "/healthz":
            return self.with_db(lambda conn: (conn.execute("SELECT 1"), self.send_json(200, {"status": "ok"})))
        user_id = self.user()
        if user_id is None:
            return self.send_json(401, {"error": "unauthorized", "message": "Send Authorization: Bearer <token>"})
        if url.path == "/transfers":
            key = (parse_qs(url.query).get("key") or [""])[0]
            return self.with_db(lambda conn: self.lookup_key(conn, user_id, key))
        m = re.fullmatch(r"/transfers/(\d{1,15})", url.path)
        if m:
            return self.with_db(lambda conn: self.get_transfer(conn, user_id, int(m.group(1))))
        self.send_json(404, {"error": "not_found", "message": "No such route"})

    def lookup_key(self, conn, user_id, key):
        row = conn.execute(
            "SELECT status, response_status, response_body FROM idempotency_keys WHERE user_id = %s AND key = %s",
            (user_id, key),
        ).fetchone()
        if row is None:
            return self.send_json(404, {"error": "key_not_found", "message": "You never sent this Idempotency-Key"})
        out = {"key": key, "status": row[0]}
        if row[0] == "completed":
            out.update(responseStatus=row[1], responseBody=row[2])
        self.send_json(200, out)

    def get_transfer(self, conn, user_id, tid):
        row = conn.execute(
            """SELECT t.id, t.from_account, t.to_account, t.amount_kobo FROM transfers t
               JOIN accounts a ON a.id = t.from_account WHERE t.id = %s AND a.owner_id = %s""",
            (tid, user_id),
        ).fetchone()
        if row is None:
            return self.send_json(404, {"error": "transfer_not_found", "message": f"Transfer {tid} was not found"})
        self.send_json(200, {"transferId": row[0], "from": row[1], "to": row[2], "amountKobo": row[3]})

    def with_db(self, fn):
        """A connection per request (autocommit; transactions are explicit)."""
        with DB_SLOTS:
            try:
                conn = psycopg.connect(DATABASE_URL, autocommit=True, connect_timeout=5)
            except psycopg.OperationalError:
                return self.send_json(503, {"error": "database_unavailable", "message": "The database cannot be reached"},
                                      {"Retry-After": "1"})
            try:
                fn(conn)
            except (BrokenPipeError, ConnectionResetError):
                pass
            except psycopg.Error as e:
                print(f"database error: {type(e).__name__}: {e}", file=sys.stderr)
                self.send_error_json(503, "database_error", "The database failed; nothing was done, retry")
            except Exception as e:
                print(f"internal error: {type(e).__name__}: {e}", file=sys.stderr)
                self.send_error_json(500, "internal_error", "Something went wrong; nothing was done, retry")
            finally:
                conn.close()

    def send_error_json(self, status, code, message):
        try:
            self.send_json(status, {"error": code, "message": message}, {"Retry-After": "1"})
        except OSError:
            pass


def create_tables():
    deadline = time.time() + 15
    while True:
        try:
            with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
                conn.execute("SELECT pg_advisory_lock(727274001)")
                try:
                    conn.execute(DDL)
                finally:
                    conn.execute("SELECT pg_advisory_unlock(727274001)")
            return
        except psycopg.OperationalError:
            if time.time() > deadline:
                raise
            time.sleep(0.3)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


def main():
    create_tables()
    server = Server(("127.0.0.1", PORT), Handler)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print(f"listening on 127.0.0.1:{PORT} (LOCK_TTL_MS={LOCK_TTL_MS}, STAMP_AFTER={int(STAMP_AFTER)})", file=sys.stderr)
    server.serve_forever()


if __name__ == "__main__":
    main()
