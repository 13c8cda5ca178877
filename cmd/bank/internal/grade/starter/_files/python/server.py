"""The lesson's transfer API, as a starter: a correct transfer, and no
idempotency at all yet. bank grade passes "plain" and fails the checks
that need keys; the lines marked YOUR WORK are where the lesson goes.

Run it the way bank grade does:  bank grade -- python3 server.py
"""

import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg
from psycopg.rows import dict_row

DATABASE_URL = os.environ["DATABASE_URL"]
PORT = int(os.environ["PORT"])
# How long a claimed key stays locked before a retry may take it over.
LOCK_TTL_MS = int(os.environ.get("LOCK_TTL_MS", "30000"))  # bank grade always sets it

# The demo tokens: user N owns account N.
USERS = {"token-ada": 1, "token-bola": 2, "token-chidi": 3}


class Answer(Exception):
    """An answer that is not a transfer: a status and an error body."""

    def __init__(self, status, code, message):
        super().__init__(message)
        self.status = status
        self.body = {"error": code, "message": message}


def create_tables():
    # YOUR WORK: create your key table here (CREATE TABLE IF NOT EXISTS),
    # keyed by (user, key), with the request's fingerprint, the stored
    # answer and the lock (see the contract: bank grade --contract).
    pass


def read_request(raw):
    """The body as {"from", "to", "amountKobo"}, or an Answer of 400."""
    try:
        req = json.loads(raw)
    except ValueError:
        raise Answer(400, "invalid_json", "the body is not JSON")
    if not isinstance(req, dict) or set(req) - {"from", "to", "amountKobo"}:
        raise Answer(400, "invalid_json", "the body must be {from, to, amountKobo}")

    def whole(name):
        value = req.get(name)
        return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**63

    if not whole("from") or not whole("to"):
        raise Answer(400, "invalid_account", "from and to must be account ids")
    if not whole("amountKobo"):
        raise Answer(400, "invalid_amount", "amountKobo must be a whole number above 0")
    return req


def transfer(user, req):
    """Move the money in ONE transaction; return (status, body)."""
    src, dst, amount = req["from"], req["to"], req["amountKobo"]
    with psycopg.connect(DATABASE_URL, autocommit=True, row_factory=dict_row) as conn:
        with conn.transaction():  # BEGIN; COMMIT at the end, ROLLBACK on an error
            # Lock both rows, in id order, so two transfers never deadlock.
            rows = conn.execute(
                "SELECT id, owner_id, status, balance_kobo FROM accounts"
                " WHERE id IN (%s, %s) ORDER BY id FOR UPDATE",
                (src, dst),
            ).fetchall()
            accounts = {row["id"]: row for row in rows}
            sender, recipient = accounts.get(src), accounts.get(dst)
            try:
                if src == dst:
                    raise Answer(422, "same_account", "from and to are the same account")
                if sender is None or sender["owner_id"] != user:
                    raise Answer(404, "account_not_found", "from is not one of your accounts")
                if sender["status"] != "active":
                    raise Answer(422, "account_not_active", "your account is " + sender["status"])
                if recipient is None or recipient["status"] != "active":
                    raise Answer(422, "recipient_unavailable", "the recipient cannot receive money")
                if sender["balance_kobo"] < amount:
                    raise Answer(422, "insufficient_funds", "the balance is too low")
                conn.execute("UPDATE accounts SET balance_kobo = balance_kobo - %s WHERE id = %s", (amount, src))
                conn.execute("UPDATE accounts SET balance_kobo = balance_kobo + %s WHERE id = %s", (amount, dst))
                row = conn.execute(
                    "INSERT INTO transfers (from_account, to_account, amount_kobo)"
                    " VALUES (%s, %s, %s) RETURNING id",
                    (src, dst, amount),
                ).fetchone()
                answer = 201, {"transferId": row["id"], "from": src, "to": dst, "amountKobo": amount}
            except Answer as refusal:  # a business refusal is an answer too
                answer = refusal.status, refusal.body
            # YOUR WORK: store the answer (status and body) under the key
            # here, in this same transaction, refusals too, after checking
            # that this request still holds the key's lock (the fencing
            # token). A crash between two commits must not transfer twice.
    return answer


class Handler(BaseHTTPRequestHandler):
    def send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 405:
            self.send_header("Allow", "POST")
        self.end_headers()
        self.wfile.write(data)

    def route(self):
        path = self.path.split("?")[0]
        if path != "/transfers":
            raise Answer(404, "not_found", "no such endpoint")
        # YOUR WORK (recommended): GET /transfers?key=KEY says what became
        # of a key of this user's (the contract's lookup check).
        if self.command != "POST":
            raise Answer(405, "method_not_allowed", "use POST /transfers")
        auth = self.headers.get("Authorization", "")
        user = USERS.get(auth.removeprefix("Bearer "))
        if user is None:
            raise Answer(401, "unauthorized", "no or unknown bearer token")
        length = int(self.headers.get("Content-Length") or 0)
        if length > 16384:
            raise Answer(413, "body_too_large", "the body is over 16 KiB")
        req = read_request(self.rfile.read(length))
        # The Idempotency-Key header is ignored, so every retry moves money again.
        # YOUR WORK: claim the key here, before the transfer: refuse a
        # request without one (400); claim (user, key) atomically with the
        # request's fingerprint; a copy of a finished request gets its
        # stored answer again, one still in progress gets 409, and the
        # same key with another request gets 422. If the transfer fails
        # with a 5xx, release the key so that a retry can make it.
        return transfer(user, req)

    def handle_request(self):
        try:
            status, body = self.route()
        except Answer as answer:
            status, body = answer.status, answer.body
        except Exception as err:  # nothing was committed: a retry is safe
            self.log_error("%s", err)
            status, body = 500, {"error": "internal_error", "message": "something went wrong"}
        self.send(status, body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_request


if __name__ == "__main__":
    create_tables()
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    print(f"listening on http://127.0.0.1:{PORT}", flush=True)
    server.serve_forever()
