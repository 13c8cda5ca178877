#!/usr/bin/python3
"""Webhook consumer for the bank: credits an account when the payment
provider says money arrived (Standard Webhooks 1.0, at-least-once delivery).

Run:  DATABASE_URL=... PORT=... WEBHOOK_SECRET=whsec_... /usr/bin/python3 consumer.py

Design: plain SQL, one database transaction per delivery. The event is
recorded with INSERT ... ON CONFLICT DO NOTHING into webhook_events, whose
event_id and payment_ref are both unique keys; the insert's row count
decides whether this delivery credits (1 row) or is a duplicate (0 rows).
The credit (balance update + deposits row) is in the same transaction, and
the 2xx answer is written only after COMMIT returns.

CONSUMER_MISTAKE, when set, switches on exactly one deliberate mistake
(see README.md). Unset or empty: the program is correct.
"""

import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg

MISTAKES = (
    "no-event-dedupe",
    "check-then-insert",
    "event-outside-transaction",
    "signature-not-checked",
    "timestamp-not-checked",
)
MISTAKE = os.environ.get("CONSUMER_MISTAKE", "").strip()

TOLERANCE_S = 5 * 60            # webhook-timestamp must be within this of now, either way
MAX_BODY = 256 * 1024           # an event is a few hundred bytes
MAX_DB_WORKERS = 8              # deliveries talking to the database at once
PG_OPTIONS = (
    "-c lock_timeout=2000"                          # never wait long on a row lock ...
    " -c statement_timeout=3000"                    # ... or a statement: answer 503 instead
    " -c idle_in_transaction_session_timeout=10000"
    " -c client_connection_check_interval=1000"     # a killed consumer's backend aborts soon
)
INT4_MAX = 2**31 - 1
INT8_MAX = 2**63 - 1

if MISTAKE == "check-then-insert":
    EVENTS_DDL = """
    CREATE TABLE IF NOT EXISTS webhook_events (
        event_id     text        NOT NULL,
        payment_ref  text        NOT NULL,
        account_id   integer     NOT NULL,
        amount_kobo  bigint      NOT NULL,
        event_type   text        NOT NULL,
        event_time   text,
        received_at  timestamptz NOT NULL DEFAULT now()
    )"""
else:
    EVENTS_DDL = """
    CREATE TABLE IF NOT EXISTS webhook_events (
        event_id     text        PRIMARY KEY,
        payment_ref  text        NOT NULL UNIQUE,
        account_id   integer     NOT NULL,
        amount_kobo  bigint      NOT NULL,
        event_type   text        NOT NULL,
        event_time   text,
        received_at  timestamptz NOT NULL DEFAULT now()
    )"""


def log(msg):
    sys.stderr.write(time.strftime("%Y-%m-%dT%H:%M:%S") + " " + msg + "\n")
    sys.stderr.flush()


def short(value, n=80):
    """A header or field value made safe for one log line."""
    s = repr(value) if not isinstance(value, str) else value
    s = s.replace("\n", "\\n").replace("\r", "\\r")
    return s if len(s) <= n else s[:n] + "..."


# ---------------------------------------------------------------- config

def load_secret(raw):
    """WEBHOOK_SECRET is whsec_<base64>; the HMAC key is the decoded part."""
    if raw.startswith("whsec_"):
        raw = raw[len("whsec_"):]
    raw = raw.strip()
    raw += "=" * (-len(raw) % 4)
    key = base64.b64decode(raw, validate=True)
    if not key:
        raise ValueError("empty key")
    return key


# ---------------------------------------------------------------- verification

class Busy(Exception):
    """Too many deliveries in flight: answer 503 so the provider retries."""


class Refused(Exception):
    """A delivery answered 4xx (the provider will not send it again)."""

    def __init__(self, status, reason):
        super().__init__(reason)
        self.status = status
        self.reason = reason


def signature_ok(key, header, msg_id, timestamp, body):
    """True if one of the space-separated v1,<base64> signatures matches."""
    signed = msg_id.encode() + b"." + timestamp.encode() + b"." + body
    expected = hmac.new(key, signed, hashlib.sha256).digest()
    matched = False
    for token in header.split():
        version, _, sig = token.partition(",")
        if version != "v1" or not sig:
            continue
        try:
            given = base64.b64decode(sig, validate=True)
        except (binascii.Error, ValueError):
            continue
        if hmac.compare_digest(given, expected):
            matched = True   # keep looping: no early exit on a match
    return matched


def verify(key, headers, body, now):
    """Check the webhook headers; raise Refused, or return (msg_id, timestamp)."""
    msg_id = headers.get("webhook-id") or ""
    timestamp = headers.get("webhook-timestamp") or ""
    if not msg_id or not timestamp:
        raise Refused(400, "missing webhook-id or webhook-timestamp")
    if not re.fullmatch(r"[0-9]{1,12}", timestamp):
        raise Refused(400, "webhook-timestamp is not Unix seconds")
    if MISTAKE != "timestamp-not-checked":
        if abs(now - int(timestamp)) > TOLERANCE_S:
            raise Refused(401, "webhook-timestamp outside 5 minutes of now (%+ds)"
                          % (int(timestamp) - now))
    if MISTAKE != "signature-not-checked":
        sig_header = headers.get("webhook-signature") or ""
        if not signature_ok(key, sig_header, msg_id, timestamp, body):
            raise Refused(401, "no matching v1 signature")
    return msg_id, timestamp


def parse_event(body):
    """The event body; raise Refused(400) if it is not one."""
    try:
        event = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise Refused(400, "body is not JSON")
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise Refused(400, "body is not an event (no type)")
    if event["type"] != "payment.received":
        return event, None
    data = event.get("data")
    if not isinstance(data, dict):
        raise Refused(400, "payment.received without data")
    payment = data.get("payment")
    account = data.get("account")
    amount = data.get("amountKobo")
    if not isinstance(payment, str) or not payment:
        raise Refused(400, "data.payment is not a non-empty string")
    if type(account) is not int or not 0 < account <= INT4_MAX:
        raise Refused(400, "data.account is not an account id")
    if type(amount) is not int or not 0 < amount <= INT8_MAX:
        raise Refused(400, "data.amountKobo is not a positive whole number of kobo")
    return event, (payment, account, amount)


# ---------------------------------------------------------------- database

def connect():
    return psycopg.connect(os.environ["DATABASE_URL"], connect_timeout=2,
                           options=PG_OPTIONS)


def ensure_schema():
    """Create the consumer's own table; retry while the database comes up."""
    deadline = time.monotonic() + 12
    while True:
        try:
            with connect() as conn:
                # two instances starting at once must not race on CREATE TABLE
                conn.execute("SELECT pg_advisory_xact_lock(7142001)")
                conn.execute(EVENTS_DDL)
                conn.commit()
            return
        except psycopg.OperationalError as e:
            if time.monotonic() > deadline:
                raise
            log("start-up: database not ready (%s); retrying" % short(str(e), 120))
            time.sleep(0.5)


def process(msg_id, event, payment):
    """One delivery, one transaction. Returns (status, outcome, extra)."""
    ref, account, amount = payment
    event_time = event.get("timestamp") if isinstance(event.get("timestamp"), str) else None
    # psycopg's "with" rolls the transaction back if anything below raises
    with connect() as conn:
        cur = conn.cursor()
        if MISTAKE == "check-then-insert":
            cur.execute("SELECT 1 FROM webhook_events"
                        " WHERE event_id = %s OR payment_ref = %s",
                        (msg_id, ref))
            fresh = cur.fetchone() is None
        else:
            cur.execute(
                "INSERT INTO webhook_events"
                " (event_id, payment_ref, account_id, amount_kobo, event_type, event_time)"
                " VALUES (%s, %s, %s, %s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                (msg_id, ref, account, amount, event["type"], event_time))
            fresh = cur.rowcount == 1
            if MISTAKE == "no-event-dedupe":
                fresh = True
            if MISTAKE == "event-outside-transaction":
                conn.commit()
        if not fresh:
            conn.rollback()
            return 200, "duplicate (event or payment already recorded): credited nothing", {}

        cur.execute("UPDATE accounts SET balance_kobo = balance_kobo + %s"
                    " WHERE id = %s RETURNING balance_kobo",
                    (amount, account))
        row = cur.fetchone()
        if row is None:
            conn.rollback()
            return 422, "no account %d: credited nothing, recorded nothing" % account, {}
        cur.execute("INSERT INTO deposits (account_id, amount_kobo, source)"
                    " VALUES (%s, %s, %s) RETURNING id",
                    (account, amount, ref))
        deposit_id = cur.fetchone()[0]
        if MISTAKE == "check-then-insert":
            cur.execute(
                "INSERT INTO webhook_events"
                " (event_id, payment_ref, account_id, amount_kobo, event_type, event_time)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                (msg_id, ref, account, amount, event["type"], event_time))
        conn.commit()
        return 200, "credited %d kobo to account %d (deposit %d, balance now %d)" % (
            amount, account, deposit_id, row[0]), {"deposit": deposit_id}


# ---------------------------------------------------------------- HTTP

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "bank-webhook-consumer"
    sys_version = ""
    timeout = 10  # seconds to wait on a slow client

    def log_message(self, fmt, *args):  # the one-line-per-delivery log is ours
        pass

    def answer(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        """The request body, byte for byte (Content-Length or chunked)."""
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            parts, total = [], 0
            while True:
                line = self.rfile.readline(1024)
                size = int(line.split(b";")[0].strip() or b"x", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                total += size
                if total > MAX_BODY:
                    raise Refused(413, "body too large")
                parts.append(self.rfile.read(size))
                self.rfile.readline(1024)
        length = self.headers.get("Content-Length")
        if length is None:
            return b""
        if not length.isdigit():
            raise Refused(400, "bad Content-Length")
        n = int(length)
        if n > MAX_BODY:
            raise Refused(413, "body too large")
        body = self.rfile.read(n)
        if len(body) != n:
            raise Refused(400, "body shorter than Content-Length")
        return body

    def do_POST(self):
        started = time.monotonic()
        h = self.headers
        who = "id=%s ts=%s" % (short(h.get("webhook-id") or "-", 60),
                               short(h.get("webhook-timestamp") or "-", 20))
        what = ""
        try:
            if self.path.split("?")[0] != "/webhooks":
                self.close_connection = True
                raise Refused(404, "no such path %s" % short(self.path, 60))
            try:
                body = self.read_body()
            except Refused:
                self.close_connection = True
                raise
            except (ValueError, OSError):
                self.close_connection = True
                raise Refused(400, "unreadable body")
            msg_id, _ = verify(self.server.key, h, body, int(time.time()))
            event, payment = parse_event(body)
            if payment is None:
                what = " type=%s" % short(event["type"], 40)
                status, outcome, extra = 200, "not a payment.received event: acknowledged, nothing written", {}
            else:
                what = " type=payment.received payment=%s account=%d amount=%d event_time=%s" % (
                    short(payment[0], 60), payment[1], payment[2], short(event.get("timestamp"), 30))
                if not self.server.db_slots.acquire(timeout=2):
                    raise Busy("too many deliveries in flight")
                try:
                    status, outcome, extra = process(msg_id, event, payment)
                finally:
                    self.server.db_slots.release()
            self.answer(status, dict({"ok": status < 300, "result": outcome}, **extra))
        except Refused as r:
            status, outcome = r.status, "refused: " + r.reason + "; wrote nothing"
            self.answer(status, {"ok": False, "error": r.reason})
        except (psycopg.Error, Busy) as e:
            # nothing committed (the transaction rolled back): the provider retries
            status = 503
            outcome = "database error, rolled back, provider will retry: %s: %s" % (
                type(e).__name__, short(str(e).strip(), 160))
            self.answer(status, {"ok": False, "error": "temporarily unavailable"})
        except Exception as e:  # a bug: answer 500 so the provider retries
            status = 500
            outcome = "internal error: %s: %s" % (type(e).__name__, short(str(e), 160))
            try:
                self.answer(status, {"ok": False, "error": "internal error"})
            except OSError:
                pass
        log("delivery %s%s -> %s -> %d (%d ms)" % (
            who, what, outcome, status, (time.monotonic() - started) * 1000))

    def _not_allowed(self):
        self.close_connection = True
        self.answer(405, {"ok": False, "error": "POST /webhooks only"})
        log("request %s %s -> refused -> 405" % (self.command, short(self.path, 60)))

    do_GET = do_PUT = do_DELETE = do_PATCH = _not_allowed


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


def main():
    if MISTAKE and MISTAKE not in MISTAKES:
        log("CONSUMER_MISTAKE=%r is not one of %s" % (MISTAKE, ", ".join(MISTAKES)))
        return 2
    for name in ("DATABASE_URL", "PORT", "WEBHOOK_SECRET"):
        if not os.environ.get(name):
            log("%s is not set" % name)
            return 2
    try:
        key = load_secret(os.environ["WEBHOOK_SECRET"])
    except (ValueError, binascii.Error):
        log("WEBHOOK_SECRET is not whsec_<base64>")  # the value itself is never logged
        return 2
    port = int(os.environ["PORT"])

    ensure_schema()
    server = Server(("127.0.0.1", port), Handler)
    server.key = key
    server.db_slots = threading.BoundedSemaphore(MAX_DB_WORKERS)

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    log("listening on 127.0.0.1:%d, POST /webhooks (pid %d)%s" % (
        port, os.getpid(), "; CONSUMER_MISTAKE=" + MISTAKE if MISTAKE else ""))
    server.serve_forever()
    server.server_close()
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
