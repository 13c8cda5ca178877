"""A payment provider's webhook consumer, as a starter: it credits the
account of every "payment received" delivery, and has no protection yet:
no signature check, no record of the events, so every delivery of an
event credits again. bank grade webhook passes "out-of-order" and fails
the rest; the lines marked YOUR WORK are where the lesson goes.

Run it the way bank grade webhook does:  bank grade webhook -- python3 consumer.py
"""

import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg

DATABASE_URL = os.environ["DATABASE_URL"]
PORT = int(os.environ["PORT"])
# whsec_ and the base64 of the key the provider signs with.
WEBHOOK_SECRET = os.environ["WEBHOOK_SECRET"]


def create_tables():
    # YOUR WORK: create the table your consumer records the events it has
    # processed in (CREATE TABLE IF NOT EXISTS), with a unique key on the
    # event's id and one on its payment reference.
    pass


def credit(conn, payment, account, amount_kobo):
    """The effect: the account credited, and its deposits row."""
    conn.execute("UPDATE accounts SET balance_kobo = balance_kobo + %s WHERE id = %s", (amount_kobo, account))
    conn.execute("INSERT INTO deposits (account_id, amount_kobo, source) VALUES (%s, %s, %s)",
                 (account, amount_kobo, payment))


class Consumer(BaseHTTPRequestHandler):
    def do_POST(self):
        if self.path != "/webhooks":
            return self.answer(404, {"error": "not_found"})
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        # YOUR WORK: verify the delivery first (webhook-id,
        # webhook-timestamp and webhook-signature, against WEBHOOK_SECRET),
        # and refuse it with a 4xx when it does not hold.
        try:
            event = json.loads(body)
            data = event["data"]
            payment, account, amount = data["payment"], int(data["account"]), int(data["amountKobo"])
        except (ValueError, KeyError, TypeError):
            return self.answer(400, {"error": "not_an_event"})
        with psycopg.connect(DATABASE_URL) as conn:  # one transaction, committed at the end of the block
            # YOUR WORK: record the event here, in this same transaction,
            # and credit nothing when it (or its payment) is recorded already.
            credit(conn, payment, account, amount)
        self.answer(200, {"credited": payment})

    def answer(self, status, body):
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


if __name__ == "__main__":
    create_tables()
    print(f"consumer listening on 127.0.0.1:{PORT}", flush=True)
    ThreadingHTTPServer(("127.0.0.1", PORT), Consumer).serve_forever()
