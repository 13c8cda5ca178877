"""A correct transfer server in Python, written from `bank grade --contract` alone.

It implements the lesson's idempotent POST /transfers (and GET /transfers?key=)
on PostgreSQL: keys scoped to (user, key), claimed atomically in their own
committed statement, a request fingerprint, lock expiry with takeover, a
fencing token checked inside the transfer's transaction, and the answer stored
in that same transaction.

Run it under the grader (Python 3 standard library plus psycopg 3):

    bank grade -- /usr/bin/python3 server.py

Environment: DATABASE_URL, PORT (listens on 127.0.0.1:$PORT), LOCK_TTL_MS.
"""
import contextlib
import hashlib
import json
import os
import re
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import psycopg
from psycopg.pq import TransactionStatus

DATABASE_URL = os.environ["DATABASE_URL"]
PORT = int(os.environ.get("PORT", "8080"))
LOCK_TTL_MS = int(os.environ.get("LOCK_TTL_MS", "2000"))

USERS = {"token-ada": 1, "token-bola": 2, "token-chidi": 3}
KEY_RE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
MAX_BIGINT = 2**63 - 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS idempotency_keys (
    user_id         bigint      NOT NULL,
    key             text        NOT NULL,
    fingerprint     text        NOT NULL,
    status          text        NOT NULL CHECK (status IN ('in_progress', 'completed')),
    lock_token      text,
    locked_until    timestamptz,
    response_status int,
    response_body   text,
    transfer_id     bigint,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, key)
)"""


class Pool:
    """A small lock-protected pool; a connection that is broken or left
    mid-transaction is discarded, never handed out again."""

    def __init__(self, url, size=32):
        self.url, self.idle, self.lock = url, [], threading.Lock()
        self.slots = threading.BoundedSemaphore(size)

    @contextlib.contextmanager
    def connection(self):
        if not self.slots.acquire(timeout=10):
            raise psycopg.OperationalError("no database connection available")
        conn = None
        try:
            with self.lock:
                conn = self.idle.pop() if self.idle else None
            if conn is None:
                conn = psycopg.connect(self.url, autocommit=True)
            yield conn
        finally:
            if conn is not None:
                if conn.closed or conn.broken or conn.info.transaction_status != TransactionStatus.IDLE:
                    conn.close()
                else:
                    with self.lock:
                        self.idle.append(conn)
            self.slots.release()


pool = Pool(DATABASE_URL)


class LostLock(Exception):
    """Our claim was taken over while we worked: the transfer must roll back."""


def error(status, code, message):
    return status, {"error": code, "message": message}


def fingerprint(method, path, body):
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{method}\n{path}\n{canonical}".encode()).hexdigest()


def validate(body):
    """Shape checks made before the key is touched (400, not stored)."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    for field in ("from", "to", "amountKobo"):
        v = body.get(field)
        if type(v) is not int or v <= 0 or v > MAX_BIGINT:
            return f"{field} must be a positive integer"
    if body["from"] == body["to"]:
        return "from and to must be different accounts"
    return None


def claim(conn, user, key, fp, token):
    """One committed statement: insert the key, or take over an expired lock
    of the same request. Returns True when this request now holds the key."""
    row = conn.execute(
        """INSERT INTO idempotency_keys (user_id, key, fingerprint, status, lock_token, locked_until)
           VALUES (%s, %s, %s, 'in_progress', %s, now() + make_interval(secs => %s))
           ON CONFLICT (user_id, key) DO UPDATE
              SET lock_token = EXCLUDED.lock_token, locked_until = EXCLUDED.locked_until,
                  updated_at = now()
            WHERE idempotency_keys.status = 'in_progress'
              AND idempotency_keys.fingerprint = EXCLUDED.fingerprint
              AND idempotency_keys.locked_until < now()
           RETURNING 1""",
        (user, key, fp, token, LOCK_TTL_MS / 1000.0),
    ).fetchone()
    return row is not None


def existing_answer(conn, user, key, fp):
    """The answer for a key someone else holds or has completed, or None if
    the key has vanished (released after a 5xx) and may be claimed again."""
    row = conn.execute(
        "SELECT fingerprint, status, response_status, response_body"
        " FROM idempotency_keys WHERE user_id = %s AND key = %s",
        (user, key),
    ).fetchone()
    if row is None:
        return None
    stored_fp, status, resp_status, resp_body = row
    if stored_fp != fp:
        return error(422, "idempotency_key_reused",
                     "this Idempotency-Key was used with a different request") + ({},)
    if status == "completed":
        return resp_status, json.loads(resp_body), {"Idempotent-Replayed": "true"}
    return error(409, "request_in_progress",
                 "a request with this Idempotency-Key is still being processed") + ({"Retry-After": "1"},)


def transfer(conn, user, body):
    """The money part, inside the caller's transaction. Returns (status, body,
    transfer_id); a refusal moves nothing and is returned like any answer."""
    src, dst, amount = body["from"], body["to"], body["amountKobo"]
    rows = conn.execute(  # lock both rows in id order, so two transfers cannot deadlock
        "SELECT id, owner_id, status FROM accounts WHERE id = ANY(%s) ORDER BY id FOR UPDATE",
        ([src, dst],),
    ).fetchall()
    accounts = {r[0]: r for r in rows}
    if src not in accounts or accounts[src][1] != user:
        return error(404, "account_not_found", f"account {src} not found") + (None,)
    if dst not in accounts:
        return error(404, "account_not_found", f"account {dst} not found") + (None,)
    if accounts[src][2] != "active" or accounts[dst][2] != "active":
        return error(422, "account_frozen", "an account in this transfer is not active") + (None,)
    debited = conn.execute(  # the conditional debit: never below zero
        "UPDATE accounts SET balance_kobo = balance_kobo - %s"
        " WHERE id = %s AND balance_kobo >= %s AND status = 'active'",
        (amount, src, amount),
    ).rowcount
    if debited != 1:
        return error(422, "insufficient_funds", "the balance is too low for this transfer") + (None,)
    conn.execute("UPDATE accounts SET balance_kobo = balance_kobo + %s WHERE id = %s", (amount, dst))
    tid = conn.execute(
        "INSERT INTO transfers (from_account, to_account, amount_kobo) VALUES (%s, %s, %s) RETURNING id",
        (src, dst, amount),
    ).fetchone()[0]
    return 201, {"transferId": tid, "from": src, "to": dst, "amountKobo": amount}, tid


def work(conn, user, key, token, body):
    """The transfer and its stored answer, in one transaction, fenced by our token."""
    with conn.transaction():
        status, answer, tid = transfer(conn, user, body)
        stored = conn.execute(
            """UPDATE idempotency_keys
                  SET status = 'completed', response_status = %s, response_body = %s,
                      transfer_id = %s, lock_token = NULL, locked_until = NULL, updated_at = now()
                WHERE user_id = %s AND key = %s AND lock_token = %s AND status = 'in_progress'""",
            (status, json.dumps(answer), tid, user, key, token),
        ).rowcount
        if stored != 1:
            raise LostLock()  # rolls the transfer back
    return status, answer, {}


def release(conn, user, key, token):
    """After a 5xx: forget the claim so that a retry runs the transfer. Best
    effort; if it fails, the lock simply expires after LOCK_TTL_MS."""
    try:
        if conn is None or conn.closed or conn.broken:
            with psycopg.connect(DATABASE_URL, autocommit=True, connect_timeout=5) as fresh:
                return release(fresh, user, key, token)
        with conn.transaction():
            conn.execute("SET LOCAL lock_timeout = '5s'")
            conn.execute(
                "DELETE FROM idempotency_keys WHERE user_id = %s AND key = %s AND lock_token = %s"
                " AND status = 'in_progress'",
                (user, key, token),
            )
    except Exception as e:  # noqa: BLE001
        print(f"release of key {key!r} failed: {e}", file=sys.stderr)


def post_transfer(user, key, raw):
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return error(400, "invalid_json", "the body is not valid JSON") + ({},)
    problem = validate(body)
    if problem:
        return error(400, "invalid_request", problem) + ({},)
    fp = fingerprint("POST", "/transfers", body)
    token = str(uuid.uuid4())
    with pool.connection() as conn:
        claimed = False
        try:
            for _ in range(3):
                if claim(conn, user, key, fp, token):
                    claimed = True
                    break
                answer = existing_answer(conn, user, key, fp)
                if answer is not None:
                    return answer
            if not claimed:
                return error(409, "request_in_progress", "try again") + ({"Retry-After": "1"},)
            try:
                return work(conn, user, key, token, body)
            except LostLock:
                return existing_answer(conn, user, key, fp) or (
                    error(409, "request_in_progress", "try again") + ({"Retry-After": "1"},))
        except Exception as e:  # noqa: BLE001 -- a 5xx: nothing stored, key released
            print(f"POST /transfers key {key!r}: {type(e).__name__}: {e}", file=sys.stderr)
            release(conn, user, key, token)  # harmless if the claim never committed
            if isinstance(e, psycopg.OperationalError):
                return error(503, "unavailable", "the database is unavailable, retry") + ({},)
            return error(500, "internal", "something broke, retry") + ({},)


def get_transfer(user, key):
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT status, response_status, response_body, transfer_id"
            " FROM idempotency_keys WHERE user_id = %s AND key = %s",
            (user, key),
        ).fetchone()
    if row is None:
        return error(404, "key_not_found", "no request was sent with this key") + ({},)
    status, resp_status, resp_body, tid = row
    out = {"key": key, "status": status}
    if status == "completed":
        out.update(responseStatus=resp_status, responseBody=json.loads(resp_body))
        if tid is not None:
            out["transferId"] = tid
    return 200, out, {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def user(self):
        auth = self.headers.get("Authorization", "")
        return USERS.get(auth[7:].strip()) if auth.startswith("Bearer ") else None

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if urlsplit(self.path).path != "/transfers":
            return self.reply(*error(404, "not_found", "no such route"))
        user = self.user()
        if user is None:
            return self.reply(*error(401, "unauthorized", "a valid bearer token is required"))
        key = (self.headers.get("Idempotency-Key") or "").strip()
        if not key:
            return self.reply(*error(400, "missing_idempotency_key", "an Idempotency-Key header is required"))
        if not KEY_RE.match(key):
            return self.reply(*error(400, "invalid_idempotency_key",
                                     "Idempotency-Key must be 16 to 64 letters, digits, - or _"))
        try:
            self.reply(*post_transfer(user, key, raw))
        except psycopg.OperationalError:  # e.g. no connection to be had
            self.reply(*error(503, "unavailable", "the database is unavailable, retry"))

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path != "/transfers":
            return self.reply(*error(404, "not_found", "no such route"))
        user = self.user()
        if user is None:
            return self.reply(*error(401, "unauthorized", "a valid bearer token is required"))
        key = (parse_qs(url.query).get("key") or [""])[0]
        if not key:
            return self.reply(*error(400, "missing_key", "the key query parameter is required"))
        try:
            self.reply(*get_transfer(user, key))
        except psycopg.Error:
            self.reply(*error(503, "unavailable", "the database is unavailable, retry"))

    def log_message(self, fmt, *args):
        pass


def create_schema():
    """CREATE TABLE IF NOT EXISTS races with itself; an advisory lock
    serialises two instances starting on one database."""
    with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('idempotency_keys schema'))")
            conn.execute(SCHEMA)


if __name__ == "__main__":
    create_schema()
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    server.daemon_threads = True
    print(f"listening on 127.0.0.1:{PORT} (lock TTL {LOCK_TTL_MS} ms)", file=sys.stderr)
    server.serve_forever()
