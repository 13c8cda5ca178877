"""A payout worker, as a starter: it drains the payout outbox, paying each
row through the rail, and has no protection yet: a new reference for
every attempt, none stored in the row, no status enquiry, no claim on the
row. bank grade payout passes "plain" and fails the rest; the lines
marked YOUR WORK are where the lesson goes.

Run it the way bank grade payout does:  bank grade payout -- python3 worker.py
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid

import psycopg

DATABASE_URL = os.environ["DATABASE_URL"]
RAIL_URL = os.environ["RAIL_URL"]
RAIL_TIMEOUT = int(os.environ.get("RAIL_TIMEOUT_MS", "1000")) / 1000


def rail(method, path, body=None):
    """The rail's answer: its status (0 for none) and its JSON."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(RAIL_URL + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=RAIL_TIMEOUT) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, {}
    except (OSError, ValueError):
        return 0, {}


def main():
    conn = psycopg.connect(DATABASE_URL, autocommit=True)
    while True:
        # YOUR WORK: claim a row for as long as you work it (an advisory
        # lock held until it is done, or a lease), so that two workers
        # never send the same one.
        rows = conn.execute("SELECT id, account_id, amount_kobo FROM payout_outbox WHERE status = 'pending' ORDER BY id").fetchall()
        for row_id, account, amount in rows:
            # YOUR WORK: one reference per row, stored in the row (and
            # committed) before the first send, and the same on every
            # attempt; after an answer that does not say whether it was
            # paid, ask GET /payouts/REFERENCE before sending it again.
            reference = "payout-" + uuid.uuid4().hex
            status, _ = rail("POST", "/payouts", {"reference": reference, "account": account, "amountKobo": amount})
            print(f"row {row_id}: POST {reference}: {status}", file=sys.stderr, flush=True)
            if status == 201:
                conn.execute("UPDATE payout_outbox SET status = 'done', reference = %s WHERE id = %s", (reference, row_id))
        time.sleep(0.2)


if __name__ == "__main__":
    main()
