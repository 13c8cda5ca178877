"""Transfer API with idempotency keys: claim-then-work, where copies WAIT.

Design (the lesson's, correct): POST /transfers claims (user, key) in its own
committed transaction (INSERT ... ON CONFLICT DO NOTHING, with the request's
fingerprint, a random lock id and locked_until = now + LOCK_TTL_MS). The
transfer and its stored answer then commit in ONE transaction, fenced: the key
row is completed only WHERE lock_id = ours; zero rows means a takeover won, so
everything rolls back. A copy that finds the key in progress under a valid
lock does not answer 409: it polls the key every 100 ms (fresh short
transactions) and replays the stored answer once it is completed, or takes
the key over with a new lock id once the lock has expired and does the work
itself; only after 30 s of waiting does it give up with 409 + Retry-After: 1.
Business refusals (4xx from the transfer) are stored and replayed; a 5xx is
never stored (the key is released). Run: /usr/bin/python3 server.py with
DATABASE_URL, PORT and LOCK_TTL_MS in the environment.
"""

import hashlib
import json
import os
import re
import sys
import time
import uuid
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from sqlalchemy import (BigInteger, Column, DateTime, Integer, Text, create_engine,
                        delete, func, select, text, update)
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.postgresql.base import PGDialect
from sqlalchemy.exc import OperationalError, SQLAlchemyError, TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, declarative_base


# --- SQLAlchemy 1.4 has no psycopg 3 dialect (it came in 2.0): a minimal one. ---
class PsycopgDialect(PGDialect):
    driver = "psycopg"
    supports_statement_cache = True
    default_paramstyle = "pyformat"

    @classmethod
    def dbapi(cls):
        import psycopg
        return psycopg

    def create_connect_args(self, url):
        opts = url.translate_connect_args(username="user", database="dbname")
        opts.update(url.query)
        return [], opts

    def is_disconnect(self, e, connection, cursor):
        if connection is not None and getattr(connection, "closed", False):
            return True
        msg = str(e)
        return "connection is closed" in msg or "server closed the connection" in msg \
            or "terminating connection" in msg or "connection is lost" in msg


registry.register("postgresql.psycopg", __name__, "PsycopgDialect")

# --- Models: the lesson's two tables (made by the grader) and our key table. ---
Base = declarative_base()


class Account(Base):
    __tablename__ = "accounts"
    id = Column(Integer, primary_key=True)
    owner_id = Column(Integer, nullable=False)
    holder = Column(Text, nullable=False)
    status = Column(Text, nullable=False)
    balance_kobo = Column(BigInteger, nullable=False)


class Transfer(Base):
    __tablename__ = "transfers"
    id = Column(Integer, primary_key=True)
    from_account = Column(Integer, nullable=False)
    to_account = Column(Integer, nullable=False)
    amount_kobo = Column(BigInteger, nullable=False)


class IdempotencyKey(Base):
    __tablename__ = "idempotency_keys"
    user_id = Column(Integer, primary_key=True)
    key = Column(Text, primary_key=True)
    request_hash = Column(Text, nullable=False)
    status = Column(Text, nullable=False)          # 'in_progress' | 'completed'
    lock_id = Column(Text)
    locked_until = Column(DateTime(timezone=True))
    response_status = Column(Integer)
    response_body = Column(Text)                   # the JSON text, replayed byte for byte
    created_at = Column(DateTime(timezone=True), nullable=False)


DDL = """CREATE TABLE IF NOT EXISTS idempotency_keys (
  user_id integer NOT NULL,
  key text NOT NULL,
  request_hash text NOT NULL,
  status text NOT NULL CHECK (status IN ('in_progress', 'completed')),
  lock_id text,
  locked_until timestamptz,
  response_status integer,
  response_body text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, key))"""

TOKENS = {"token-ada": 1, "token-bola": 2, "token-chidi": 3}
KEY_RE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
WAIT_LIMIT_S = 30.0
POLL_S = 0.1

url = os.environ["DATABASE_URL"]
url = re.sub(r"^postgres(ql)?(\+\w+)?://", "postgresql+psycopg://", url)
LOCK_TTL = timedelta(milliseconds=int(os.environ.get("LOCK_TTL_MS", "30000")))
engine = create_engine(url, pool_size=5, max_overflow=25, pool_pre_ping=True, future=True)


class LostLock(Exception):
    """Our lock id is no longer on the key: another request took it over."""


def err(status, code, message):
    return status, {"error": code, "message": message}


def fingerprint(body):
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"POST /transfers {canonical}".encode()).hexdigest()


def whole(v):
    """A JSON number that is a whole number, as an int; else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        return int(v)
    if isinstance(v, int) and abs(v) < 2**63:
        return v
    return None


def transfer(s, user_id, body):
    """The lesson's transfer, inside the caller's transaction: (status, body)."""
    frm, to, amount = whole(body.get("from")), whole(body.get("to")), whole(body.get("amountKobo"))
    if frm is None or to is None:
        return err(400, "invalid_account", "from and to must be account numbers")
    if amount is None or amount <= 0:
        return err(400, "invalid_amount", "amountKobo must be a whole number of kobo above 0")
    if frm == to:
        return err(422, "same_account", "You cannot transfer to the same account")
    # Lock both rows in id order, so opposite transfers take turns instead of deadlocking.
    rows = {a.id: a for a in s.execute(select(Account).where(Account.id.in_([frm, to]))
                                       .order_by(Account.id).with_for_update()).scalars()}
    sender, recipient = rows.get(frm), rows.get(to)
    if sender is None or sender.owner_id != user_id:
        return err(404, "account_not_found", f"Account {frm} was not found")
    if sender.status != "active":
        return err(422, "account_not_active", f"Account {frm} is {sender.status}")
    if recipient is None or recipient.status != "active":
        return err(422, "recipient_unavailable", f"Account {to} cannot receive transfers")
    if sender.balance_kobo < amount:
        return err(422, "insufficient_funds", "The balance is too low for this transfer")
    sender.balance_kobo -= amount
    recipient.balance_kobo += amount
    record = Transfer(from_account=frm, to_account=to, amount_kobo=amount)
    s.add(record)
    s.flush()
    return 201, {"transferId": record.id, "from": frm, "to": to, "amountKobo": amount,
                 "balanceKobo": sender.balance_kobo}


def key_filter(user_id, key):
    return (IdempotencyKey.user_id == user_id, IdempotencyKey.key == key)


def begin_key(user_id, key, fp):
    """Claim the key, or wait for its first copy. Returns ('proceed', lock_id),
    ('replay', status, body_text) or ('respond', status, body)."""
    deadline = time.monotonic() + WAIT_LIMIT_S
    while True:
        lock_id = uuid.uuid4().hex
        with Session(engine) as s, s.begin():
            claimed = s.execute(
                pg_insert(IdempotencyKey)
                .values(user_id=user_id, key=key, request_hash=fp, status="in_progress",
                        lock_id=lock_id, locked_until=func.now() + LOCK_TTL, created_at=func.now())
                .on_conflict_do_nothing(index_elements=["user_id", "key"])
                .returning(IdempotencyKey.key)).first()
        if claimed:
            return ("proceed", lock_id)
        with Session(engine) as s, s.begin():
            row = s.get(IdempotencyKey, (user_id, key))
            if row is None:
                continue  # released (its first copy failed) since our insert: claim again
            if row.request_hash != fp:
                return ("respond",) + err(422, "idempotency_key_reused",
                                          "This Idempotency-Key was sent with a different request")
            if row.status == "completed":
                return ("replay", row.response_status, row.response_body)
            taken = s.execute(
                update(IdempotencyKey)
                .where(*key_filter(user_id, key), IdempotencyKey.status == "in_progress",
                       IdempotencyKey.locked_until < func.now())
                .values(lock_id=lock_id, locked_until=func.now() + LOCK_TTL)
                .execution_options(synchronize_session=False))
            if taken.rowcount == 1:
                return ("proceed", lock_id)  # the lock had expired: took it over
        if time.monotonic() >= deadline:
            return ("respond",) + err(409, "request_in_progress",
                                      "This request is still being processed; retry shortly")
        time.sleep(POLL_S)


def do_work(user_id, key, lock_id, body):
    """The transfer and its stored answer, one transaction, fenced by lock_id."""
    with Session(engine) as s, s.begin():
        status, payload = transfer(s, user_id, body)
        done = s.execute(
            update(IdempotencyKey)
            .where(*key_filter(user_id, key), IdempotencyKey.lock_id == lock_id)
            .values(status="completed", response_status=status, response_body=json.dumps(payload),
                    lock_id=None, locked_until=None)
            .execution_options(synchronize_session=False))
        if done.rowcount != 1:
            raise LostLock()  # leaving the with block rolls the transfer back
    return status, payload


def release_key(user_id, key, lock_id):
    try:
        with Session(engine) as s, s.begin():
            s.execute(delete(IdempotencyKey)
                      .where(*key_filter(user_id, key), IdempotencyKey.lock_id == lock_id)
                      .execution_options(synchronize_session=False))
    except SQLAlchemyError as e:
        print(f"release of key failed (its lock will expire): {e}", file=sys.stderr)


def handle_transfer(user_id, key, body):
    """Returns (status, body_text, replayed)."""
    fp = fingerprint(body)
    while True:
        started = begin_key(user_id, key, fp)
        if started[0] == "replay":
            return started[1], started[2], True
        if started[0] == "respond":
            return started[1], json.dumps(started[2]), False
        lock_id = started[1]
        try:
            status, payload = do_work(user_id, key, lock_id, body)
            return status, json.dumps(payload), False
        except LostLock:
            continue  # a takeover holds the key now: wait for its answer like any copy
        except Exception:
            release_key(user_id, key, lock_id)
            raise


def parse_key(values):
    """(key, None) or (None, (status, body)) from the Idempotency-Key lines."""
    if not values:
        return None, err(400, "idempotency_key_required",
                         "Send an Idempotency-Key header of 16 to 64 letters, digits, - or _")
    if len(values) > 1:
        return None, err(400, "idempotency_key_invalid", "Send exactly one Idempotency-Key")
    v = values[0].strip()
    m = re.fullmatch(r'"([^"\\]*)"(;.*)?', v)  # RFC 8941 String, parameters ignored
    if m:
        v = m.group(1)
    elif '"' in v or "," in v or " " in v:
        return None, err(400, "idempotency_key_invalid", "The Idempotency-Key is not one key")
    if not KEY_RE.match(v):
        return None, err(400, "idempotency_key_required",
                         "Send an Idempotency-Key header of 16 to 64 letters, digits, - or _")
    return v, None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send_json(self, status, body_text, extra=None):
        data = body_text.encode() if isinstance(body_text, str) else json.dumps(body_text).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def user(self):
        auth = self.headers.get("Authorization", "")
        return TOKENS.get(auth[7:].strip()) if auth.startswith("Bearer ") else None

    def guarded(self, fn):
        try:
            fn()
        except (OperationalError, PoolTimeout) as e:
            print(f"database error: {e}", file=sys.stderr)
            self.send_json(503, {"error": "service_unavailable",
                                 "message": "The database is unavailable; retry shortly"},
                           {"Retry-After": "1"})
        except Exception as e:
            print(f"internal error: {e!r}", file=sys.stderr)
            self.send_json(500, {"error": "internal_error", "message": "Something went wrong; retry"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.guarded(lambda: self.post(raw))

    def post(self, raw):
        if urlsplit(self.path).path != "/transfers":
            return self.send_json(404, {"error": "not_found", "message": "No such route"})
        user_id = self.user()
        if user_id is None:
            return self.send_json(401, {"error": "unauthorized", "message": "Send a valid bearer token"},
                                  {"WWW-Authenticate": "Bearer"})
        key, problem = parse_key(self.headers.get_all("Idempotency-Key") or [])
        if problem:
            return self.send_json(*problem)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return self.send_json(400, {"error": "invalid_json", "message": "The body must be one JSON object"})
        status, body_text, replayed = handle_transfer(user_id, key, body)
        headers = {}
        if replayed:
            headers["Idempotent-Replayed"] = "true"
        if status == 201:
            headers["Location"] = f"/transfers/{json.loads(body_text)['transferId']}"
        if status == 409:
            headers["Retry-After"] = "1"
        self.send_json(status, body_text, headers)

    def do_GET(self):
        self.guarded(self.get)

    def get(self):
        parts = urlsplit(self.path)
        if parts.path == "/healthz":
            with engine.connect() as c:
                c.execute(text("SELECT 1"))
            return self.send_json(200, {"status": "ok"})
        user_id = self.user()
        if user_id is None:
            return self.send_json(401, {"error": "unauthorized", "message": "Send a valid bearer token"},
                                  {"WWW-Authenticate": "Bearer"})
        not_found = (404, {"error": "not_found", "message": "No such transfer"})
        if parts.path == "/transfers":
            key = parse_qs(parts.query).get("key", [""])[0].strip('"')
            with Session(engine) as s:
                row = s.get(IdempotencyKey, (user_id, key))
                if row is None:
                    return self.send_json(*not_found)
                out = {"key": key, "status": row.status}
                if row.status == "completed":
                    out["responseStatus"] = row.response_status
                    out["responseBody"] = json.loads(row.response_body)
            return self.send_json(200, out)
        m = re.fullmatch(r"/transfers/(\d+)", parts.path)
        if m:
            with Session(engine) as s:
                t = s.get(Transfer, int(m.group(1)))
                owner = t and s.get(Account, t.from_account)
                if owner is None or owner.owner_id != user_id:
                    return self.send_json(*not_found)
                out = {"transferId": t.id, "from": t.from_account, "to": t.to_account,
                       "amountKobo": t.amount_kobo}
            return self.send_json(200, out)
        self.send_json(*not_found)


def create_tables():
    """Two instances may start at once: serialise the DDL with an advisory lock."""
    with engine.begin() as c:
        c.execute(text("SELECT pg_advisory_xact_lock(8423001)"))
        c.execute(text(DDL))


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


if __name__ == "__main__":
    create_tables()
    server = Server(("127.0.0.1", int(os.environ["PORT"])), Handler)
    print(f"listening on 127.0.0.1:{os.environ['PORT']}, lock TTL {LOCK_TTL}", file=sys.stderr)
    server.serve_forever()
