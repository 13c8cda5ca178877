#!/usr/bin/env python3
"""A transfer server for `bank grade`, correct by default, that can be
switched, one at a time, into each classic idempotency mistake.

It is test material for the grader: the correct server should pass every
check, and each mistake should be caught (and named) by the report card.
Written only from the contract (`bank grade --contract`).

Run it (Python 3 standard library plus psycopg 3, so /usr/bin/python3):

    bank grade -- /usr/bin/python3 server.py                     # correct
    MISTAKE=name bank grade -- /usr/bin/python3 server.py        # one mistake

Environment: DATABASE_URL, PORT (listens on 127.0.0.1:$PORT), LOCK_TTL_MS
(default 2000) and MISTAKE, one of:

    memory-keys         keys in a dict in process memory, not in the database
    no-fencing          completing a key does not check the lock id
    no-lock-expiry      a claim never expires
    second-transaction  the answer is stored in a second transaction
    replay-500          an unexpected error is stored as a 500 and replayed
    unscoped-keys       keys stored by key alone, not (user, key)
    no-fingerprint      no request fingerprint check
    raw-fingerprint     the fingerprint hashes the raw body bytes
    check-then-insert   no unique key; SELECT, then INSERT when none is found
    refuse-copies       an identical copy of a completed key is answered 422
    changed-body-417    a reused key with another body is answered 417

An empty MISTAKE is the correct server; an unknown one exits 2. Every place
a mistake changes the code is marked `# MISTAKE <name>: ...`.
"""

import contextlib
import hashlib
import json
import os
import re
import signal
import sys
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import psycopg
from psycopg.pq import TransactionStatus

MISTAKES = {
    "memory-keys",
    "no-fencing",
    "no-lock-expiry",
    "second-transaction",
    "replay-500",
    "unscoped-keys",
    "no-fingerprint",
    "raw-fingerprint",
    "check-then-insert",
    "refuse-copies",
    "changed-body-417",
}

MISTAKE = os.environ.get("MISTAKE", "").strip()
if MISTAKE and MISTAKE not in MISTAKES:
    print(
        "server.py: unknown MISTAKE %r; choose one of: %s (or leave it empty)"
        % (MISTAKE, ", ".join(sorted(MISTAKES))),
        file=sys.stderr,
    )
    sys.exit(2)

DATABASE_URL = os.environ.get("DATABASE_URL", "")
try:
    PORT = int(os.environ.get("PORT", ""))
    LOCK_TTL_MS = int(os.environ.get("LOCK_TTL_MS") or "2000")
except ValueError:
    print("server.py: PORT and LOCK_TTL_MS must be integers", file=sys.stderr)
    sys.exit(2)
if not DATABASE_URL:
    print("server.py: DATABASE_URL is not set", file=sys.stderr)
    sys.exit(2)

TOKENS = {"token-ada": 1, "token-bola": 2, "token-chidi": 3}
KEY_RE = re.compile(r"[A-Za-z0-9_-]{16,64}")
SETUP_LOCK = 7_302_205_118  # pg_advisory_xact_lock id for creating the key table


def log(*args):
    print("server.py[%d]:" % os.getpid(), *args, file=sys.stderr, flush=True)


def error(code, message):
    return {"error": code, "message": message}


class LockLost(Exception):
    """This request no longer holds its key's lock: another took it over."""


# ---------------------------------------------------------------------------
# A small connection pool (psycopg_pool is not installed).


class Pool:
    def __init__(self, url, size=16):
        self.url = url
        self.idle = []
        self.lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(size)

    def connect(self):
        return psycopg.connect(self.url, autocommit=True)

    @contextlib.contextmanager
    def connection(self):
        self.slots.acquire()
        conn = None
        try:
            with self.lock:
                conn = self.idle.pop() if self.idle else None
            if conn is None or conn.closed:
                conn = self.connect()
            yield conn
        finally:
            if conn is not None:
                if (
                    conn.closed
                    or conn.broken
                    or conn.info.transaction_status != TransactionStatus.IDLE
                ):
                    with contextlib.suppress(Exception):
                        conn.close()
                else:
                    with self.lock:
                        self.idle.append(conn)
            self.slots.release()


POOL = Pool(DATABASE_URL)


# ---------------------------------------------------------------------------
# Fingerprints, scopes and what to do with a key that is already there.


def fingerprint(method, path, raw, body):
    if MISTAKE == "raw-fingerprint":
        # MISTAKE raw-fingerprint: hashes the raw body bytes, so the same JSON
        # with its keys reordered (or other spacing) looks like another request.
        canonical = raw
    else:
        canonical = json.dumps(
            body, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()
    return hashlib.sha256(method.encode() + b" " + path.encode() + b"\n" + canonical).hexdigest()


def key_scope(user_id):
    if MISTAKE == "unscoped-keys":
        # MISTAKE unscoped-keys: every user's keys share one scope, so keys are
        # stored by key alone: another user's request with the same key is
        # answered from (or refused by) the first user's key.
        return 0
    return user_id


def decide(stored_fingerprint, status, expired, fp):
    """For a key that is already stored: body_differs, replay, take_over or in_progress."""
    if MISTAKE == "no-fingerprint":
        # MISTAKE no-fingerprint: the stored fingerprint is never compared, so a
        # reused key with another body gets the stored answer replayed.
        pass
    elif stored_fingerprint != fp:
        return "body_differs"
    if status == "completed":
        return "replay"
    if MISTAKE == "no-lock-expiry":
        # MISTAKE no-lock-expiry: the claim's lock never expires, so a key
        # whose server crashed is 409 for ever and the retry never runs.
        expired = False
    if expired:
        return "take_over"
    return "in_progress"


class Claim:
    def __init__(self, action, lock_id=None, status=None, body=None):
        self.action = action  # run, body_differs, replay, in_progress
        self.lock_id = lock_id
        self.status = status
        self.body = body


# ---------------------------------------------------------------------------
# Keys kept in PostgreSQL (the correct place).


class PgKeys:
    def setup(self, conn):
        constraint = ",\n                PRIMARY KEY (user_id, key)"
        if MISTAKE == "check-then-insert":
            # MISTAKE check-then-insert: the key table has no primary key or
            # unique constraint, so nothing stops two rows for one key.
            constraint = ""
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (SETUP_LOCK,))
            cur.execute(
                """
            CREATE TABLE IF NOT EXISTS idempotency_keys (
                user_id         bigint      NOT NULL,
                key             text        NOT NULL,
                fingerprint     text        NOT NULL,
                status          text        NOT NULL,
                lock_id         uuid,
                locked_until    timestamptz,
                response_status integer,
                response_body   text,
                created_at      timestamptz NOT NULL DEFAULT now(),
                completed_at    timestamptz%s
            )"""
                % constraint
            )

    def claim(self, conn, scope, key, fp):
        lock_id = uuid.uuid4()
        with conn.transaction(), conn.cursor() as cur:
            while True:
                if MISTAKE == "check-then-insert":
                    # MISTAKE check-then-insert: SELECT the key and, finding
                    # none, INSERT it (no ON CONFLICT): copies that arrive
                    # together all find none, all insert, and all run.
                    cur.execute(
                        "SELECT 1 FROM idempotency_keys WHERE user_id = %s AND key = %s",
                        (scope, key),
                    )
                    if cur.fetchone() is None:
                        cur.execute(
                            """INSERT INTO idempotency_keys
                                   (user_id, key, fingerprint, status, lock_id, locked_until)
                               VALUES (%s, %s, %s, 'in_progress', %s,
                                       clock_timestamp() + %s * interval '1 millisecond')""",
                            (scope, key, fp, lock_id, LOCK_TTL_MS),
                        )
                        return Claim("run", lock_id)
                else:
                    cur.execute(
                        """INSERT INTO idempotency_keys
                               (user_id, key, fingerprint, status, lock_id, locked_until)
                           VALUES (%s, %s, %s, 'in_progress', %s,
                                   clock_timestamp() + %s * interval '1 millisecond')
                           ON CONFLICT (user_id, key) DO NOTHING
                           RETURNING 1""",
                        (scope, key, fp, lock_id, LOCK_TTL_MS),
                    )
                    if cur.fetchone() is not None:
                        return Claim("run", lock_id)
                cur.execute(
                    """SELECT fingerprint, status, locked_until <= clock_timestamp(),
                              response_status, response_body
                         FROM idempotency_keys
                        WHERE user_id = %s AND key = %s
                          FOR UPDATE""",
                    (scope, key),
                )
                row = cur.fetchone()
                if row is None:
                    continue  # released between our INSERT and SELECT: claim again
                action = decide(row[0], row[1], bool(row[2]), fp)
                if action == "take_over":
                    cur.execute(
                        """UPDATE idempotency_keys
                              SET lock_id = %s,
                                  locked_until = clock_timestamp() + %s * interval '1 millisecond'
                            WHERE user_id = %s AND key = %s""",
                        (lock_id, LOCK_TTL_MS, scope, key),
                    )
                    return Claim("run", lock_id)
                return Claim(action, status=row[3], body=row[4])

    def complete(self, cur, scope, key, lock_id, status, text):
        """Store the answer; True when this request still held the lock."""
        if MISTAKE == "no-fencing":
            # MISTAKE no-fencing: completing the key does not check the lock id,
            # so a server that lost its lock to a takeover still commits.
            cur.execute(
                """UPDATE idempotency_keys
                      SET status = 'completed', response_status = %s,
                          response_body = %s, completed_at = now()
                    WHERE user_id = %s AND key = %s""",
                (status, text, scope, key),
            )
        else:
            cur.execute(
                """UPDATE idempotency_keys
                      SET status = 'completed', response_status = %s,
                          response_body = %s, completed_at = now()
                    WHERE user_id = %s AND key = %s
                      AND lock_id = %s AND status = 'in_progress'""",
                (status, text, scope, key, lock_id),
            )
        return cur.rowcount > 0

    def release(self, conn, scope, key, lock_id):
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(
                """DELETE FROM idempotency_keys
                    WHERE user_id = %s AND key = %s
                      AND lock_id = %s AND status = 'in_progress'""",
                (scope, key, lock_id),
            )

    def store_answer(self, conn, scope, key, lock_id, status, text):
        with conn.transaction(), conn.cursor() as cur:
            self.complete(cur, scope, key, lock_id, status, text)

    def lookup(self, conn, scope, key):
        with conn.cursor() as cur:
            cur.execute(
                """SELECT status, response_status, response_body
                     FROM idempotency_keys WHERE user_id = %s AND key = %s""",
                (scope, key),
            )
            return cur.fetchone()


# ---------------------------------------------------------------------------
# Keys kept in process memory (the memory-keys mistake).


class MemoryKeys:
    # MISTAKE memory-keys: keys live in this process's memory, not in the
    # database: a second instance does not see them, a restart loses them,
    # and the answer is not stored in the transfer's transaction.
    def __init__(self):
        self.lock = threading.Lock()
        self.keys = {}

    def setup(self, conn):
        pass

    def claim(self, conn, scope, key, fp):
        lock_id = uuid.uuid4()
        now = time.monotonic()
        with self.lock:
            entry = self.keys.get((scope, key))
            if entry is None:
                self.keys[(scope, key)] = {
                    "fingerprint": fp,
                    "status": "in_progress",
                    "lock_id": lock_id,
                    "locked_until": now + LOCK_TTL_MS / 1000.0,
                    "response_status": None,
                    "response_body": None,
                }
                return Claim("run", lock_id)
            action = decide(entry["fingerprint"], entry["status"], entry["locked_until"] <= now, fp)
            if action == "take_over":
                entry["lock_id"] = lock_id
                entry["locked_until"] = now + LOCK_TTL_MS / 1000.0
                return Claim("run", lock_id)
            return Claim(action, status=entry["response_status"], body=entry["response_body"])

    def complete(self, cur, scope, key, lock_id, status, text):
        with self.lock:
            entry = self.keys.get((scope, key))
            if entry is None or entry["lock_id"] != lock_id or entry["status"] != "in_progress":
                return False
            entry.update(status="completed", response_status=status, response_body=text)
            return True

    def release(self, conn, scope, key, lock_id):
        with self.lock:
            entry = self.keys.get((scope, key))
            if entry is not None and entry["lock_id"] == lock_id:
                del self.keys[(scope, key)]

    def store_answer(self, conn, scope, key, lock_id, status, text):
        self.complete(None, scope, key, lock_id, status, text)

    def lookup(self, conn, scope, key):
        with self.lock:
            entry = self.keys.get((scope, key))
            if entry is None:
                return None
            return (entry["status"], entry["response_status"], entry["response_body"])


KEYS = MemoryKeys() if MISTAKE == "memory-keys" else PgKeys()


# ---------------------------------------------------------------------------
# The transfer.


def transfer_in(cur, user_id, body):
    """Inside the caller's transaction: make the transfer or refuse it."""
    frm, to, amount = body["from"], body["to"], body["amountKobo"]
    cur.execute(
        """SELECT id, owner_id, status, balance_kobo FROM accounts
            WHERE id = ANY(%s) ORDER BY id FOR UPDATE""",
        ([frm, to],),
    )
    rows = {r[0]: r for r in cur.fetchall()}
    src, dst = rows.get(frm), rows.get(to)
    if src is None or src[1] != user_id:
        return 404, error("account_not_found", "account %d is not one of yours" % frm)
    if dst is None:
        return 404, error("account_not_found", "account %d does not exist" % to)
    for acct in (src, dst):
        if str(acct[2]) != "active":
            return 422, error("account_frozen", "account %d is %s" % (acct[0], acct[2]))
    if src[3] < amount:
        return 422, error("insufficient_funds", "account %d has %d kobo" % (frm, src[3]))
    cur.execute("UPDATE accounts SET balance_kobo = balance_kobo - %s WHERE id = %s", (amount, frm))
    cur.execute("UPDATE accounts SET balance_kobo = balance_kobo + %s WHERE id = %s", (amount, to))
    cur.execute(
        "INSERT INTO transfers (from_account, to_account, amount_kobo) VALUES (%s, %s, %s) RETURNING id",
        (frm, to, amount),
    )
    transfer_id = cur.fetchone()[0]
    return 201, {"transferId": transfer_id, "from": frm, "to": to, "amountKobo": amount}


def run_transfer(conn, scope, user_id, key, lock_id, body):
    with conn.transaction(), conn.cursor() as cur:
        status, payload = transfer_in(cur, user_id, body)
        text = json.dumps(payload)
        if MISTAKE != "second-transaction":
            # The answer is stored, fenced by our lock id, in the transfer's
            # own transaction: both commit or neither does.
            if not KEYS.complete(cur, scope, key, lock_id, status, text):
                raise LockLost()
    if MISTAKE == "second-transaction":
        # MISTAKE second-transaction: the transfer has already committed; the
        # answer is stored in a second transaction, so a crash between the two
        # commits leaves the key claimed but unanswered and the retry runs again.
        with conn.transaction(), conn.cursor() as cur:
            if not KEYS.complete(cur, scope, key, lock_id, status, text):
                raise LockLost()
    return status, text


def post_transfer(scope, user_id, key, fp, body):
    """Returns (status, body text, extra headers)."""
    with POOL.connection() as conn:
        try:
            claim = KEYS.claim(conn, scope, key, fp)
        except Exception:
            log("claim failed:", traceback.format_exc())
            return 500, json.dumps(error("internal", "the key could not be claimed")), {}

        if claim.action == "body_differs":
            if MISTAKE == "changed-body-417":
                # MISTAKE changed-body-417: a reused key with another body is
                # answered 417 instead of 422 (the contract accepts any 4xx
                # but 409 and 429, so this one should still pass).
                return 417, json.dumps(error("idempotency_key_reused",
                                             "this key was used for another request")), {}
            return 422, json.dumps(error("idempotency_key_reused",
                                         "this key was used for another request")), {}
        if claim.action == "replay":
            if MISTAKE == "refuse-copies":
                # MISTAKE refuse-copies: an identical copy of a completed key
                # is refused as if its body differed, instead of replayed.
                return 422, json.dumps(error("idempotency_key_reused",
                                             "this key was used for another request")), {}
            return claim.status, claim.body, {"Idempotent-Replayed": "true"}
        if claim.action == "in_progress":
            return 409, json.dumps(error("in_progress", "a request with this key is being processed")), {
                "Retry-After": "1"
            }

        lock_id = claim.lock_id
        try:
            status, text = run_transfer(conn, scope, user_id, key, lock_id, body)
            return status, text, {}
        except LockLost:
            return 409, json.dumps(error("lock_lost", "another request took this key over")), {
                "Retry-After": "1"
            }
        except Exception:
            log("transfer failed:", traceback.format_exc().strip().splitlines()[-1])
            status = 500
            text = json.dumps(error("internal", "something broke; nothing moved, retry"))
            try:
                target = conn if not (conn.closed or conn.broken) else None
                with contextlib.ExitStack() as stack:
                    if target is None:
                        target = stack.enter_context(POOL.connect())
                    if MISTAKE == "replay-500":
                        # MISTAKE replay-500: the unexpected error is stored
                        # under the key as a 500 and replayed to every retry,
                        # instead of releasing the key so a retry can run.
                        KEYS.store_answer(target, scope, key, lock_id, status, text)
                    else:
                        KEYS.release(target, scope, key, lock_id)
            except Exception:
                log("releasing the key failed (it will expire):", traceback.format_exc())
            return status, text, {}


# ---------------------------------------------------------------------------
# HTTP.


def valid_id(v):
    return isinstance(v, int) and not isinstance(v, bool) and 0 < v < 2**31


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "python-mistakes"

    def log_message(self, fmt, *args):
        pass

    def send(self, status, text, headers=None):
        data = text.encode() if isinstance(text, str) else text
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, status, obj, headers=None):
        self.send(status, json.dumps(obj), headers)

    def user(self):
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            return None
        return TOKENS.get(auth[len("Bearer "):].strip())

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def do_POST(self):
        raw = self.read_body()
        path = urlsplit(self.path).path
        if path != "/transfers":
            return self.send_json(404, error("not_found", "no such route"))
        user_id = self.user()
        if user_id is None:
            return self.send_json(401, error("unauthorized", "no or unknown bearer token"))
        key = self.headers.get("Idempotency-Key")
        if not key:
            return self.send_json(400, error("missing_idempotency_key", "send an Idempotency-Key"))
        if not KEY_RE.fullmatch(key):
            return self.send_json(400, error("invalid_idempotency_key",
                                             "16 to 64 letters, digits, - or _"))
        try:
            body = json.loads(raw)
        except ValueError:
            return self.send_json(400, error("invalid_json", "the body is not JSON"))
        if not isinstance(body, dict) or not all(
            valid_id(body.get(f)) for f in ("from", "to", "amountKobo")
        ):
            return self.send_json(400, error("invalid_request",
                                             'send {"from":N,"to":N,"amountKobo":N}, positive integers'))
        if body["from"] == body["to"]:
            return self.send_json(400, error("invalid_request", "from and to are the same account"))
        fp = fingerprint("POST", "/transfers", raw, body)
        status, text, headers = post_transfer(key_scope(user_id), user_id, key, fp, body)
        self.send(status, text, headers)

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path != "/transfers":
            return self.send_json(404, error("not_found", "no such route"))
        user_id = self.user()
        if user_id is None:
            return self.send_json(401, error("unauthorized", "no or unknown bearer token"))
        key = (parse_qs(url.query).get("key") or [""])[0]
        if not key:
            return self.send_json(400, error("missing_key", "GET /transfers?key=KEY"))
        try:
            with POOL.connection() as conn:
                row = KEYS.lookup(conn, key_scope(user_id), key)
        except Exception:
            log("lookup failed:", traceback.format_exc())
            return self.send_json(500, error("internal", "the lookup failed"))
        if row is None:
            return self.send_json(404, error("key_not_found", "you never sent this key"))
        out = {"key": key, "status": row[0]}
        if row[0] == "completed":
            out["responseStatus"] = row[1]
            try:
                out["responseBody"] = json.loads(row[2])
            except (TypeError, ValueError):
                out["responseBody"] = row[2]
        self.send_json(200, out)


def main():
    try:
        with POOL.connect() as conn:
            KEYS.setup(conn)
    except Exception as e:
        log("cannot set up the key table:", e)
        sys.exit(1)
    httpd = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    httpd.daemon_threads = True

    def stop(signum, frame):
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log("listening on 127.0.0.1:%d, MISTAKE=%s, LOCK_TTL_MS=%d" % (PORT, MISTAKE or "(none)", LOCK_TTL_MS))
    httpd.serve_forever()
    httpd.server_close()


if __name__ == "__main__":
    main()
