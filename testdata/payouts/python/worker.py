#!/usr/bin/python3
"""Payout worker: drains payout_outbox, paying each row through the rail.

Environment: DATABASE_URL, RAIL_URL, RAIL_TIMEOUT_MS (default 1000),
WORKER_MISTAKE (unset for the correct worker; see README.md).

One loop: list pending rows, claim one (SELECT ... FOR UPDATE SKIP LOCKED in
the transaction that sets its reference), call the rail outside any
transaction, mark the row done in a short transaction of its own.
"""

import http.client
import json
import os
import signal
import sys
import time
import uuid
from urllib.parse import quote, urlsplit

import psycopg

MISTAKES = (
    "new-reference-per-attempt",
    "resend-without-asking",
    "done-on-failure",
    "no-claim",
    "no-backoff",
)
MISTAKE = os.environ.get("WORKER_MISTAKE", "")

POLL_SECONDS = 0.3      # idle: look again for new rows at least every 500 ms
LIST_LIMIT = 20         # rows listed per look; each is claimed on its own
FIRST_WAIT = 0.1        # wait after an unknown outcome, doubling ...
MAX_WAIT = 1.0          # ... to a second at most between tries
LOCK_CLASS = 0x5041     # first key of the advisory lock held while paying a row

stopping = False


def log(msg):
    stamp = time.strftime("%H:%M:%S") + ".%03d" % (int(time.time() * 1000) % 1000)
    sys.stderr.write("%s worker[%d] %s\n" % (stamp, os.getpid(), msg))
    sys.stderr.flush()


def on_signal(signum, frame):
    global stopping
    stopping = True


def nap(seconds):
    """Sleep, but wake up promptly when asked to stop."""
    end = time.monotonic() + seconds
    while not stopping:
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.05))


def new_reference(row_id):
    return "po-%d-%s" % (row_id, uuid.uuid4().hex)  # 8..64 of [A-Za-z0-9_-]


# ---------------------------------------------------------------- the rail

class Rail:
    def __init__(self, url, timeout_ms):
        parts = urlsplit(url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if self.https else 80)
        self.base = parts.path.rstrip("/")
        self.timeout = timeout_ms / 1000.0

    def call(self, method, path, body=None):
        """One request. Returns (status or None, parsed JSON or None, text)."""
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        conn = cls(self.host, self.port, timeout=self.timeout)
        headers = {"Accept": "application/json", "Connection": "close"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, self.base + path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException) as e:
            return None, None, "no answer (%s: %s)" % (type(e).__name__, e)
        finally:
            conn.close()
        text = raw.decode("utf-8", "replace").strip()
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        return resp.status, doc, "%d %s" % (resp.status, text[:200])

    def post(self, row, ref):
        return self.call("POST", "/payouts", {
            "reference": ref, "account": row.account_id, "amountKobo": row.amount_kobo})

    def get(self, ref):
        return self.call("GET", "/payouts/" + quote(ref, safe=""))


# ---------------------------------------------------------------- the database

class Row:
    def __init__(self, id, account_id, amount_kobo, reference):
        self.id = id
        self.account_id = account_id
        self.amount_kobo = amount_kobo
        self.reference = reference
        self.had_reference = reference is not None  # set by an earlier attempt
        self.locked = False


def list_pending(db, refused):
    cur = db.execute(
        "SELECT id, account_id, amount_kobo, reference FROM payout_outbox"
        " WHERE status = 'pending' AND NOT (id = ANY(%s::int[]))"
        " ORDER BY id LIMIT %s", (sorted(refused), LIST_LIMIT))
    return [Row(*r) for r in cur.fetchall()]


def claim(db, listed):
    """Make the row ours and give it its one reference, committed before any POST.

    The row lock (FOR UPDATE SKIP LOCKED) covers this transaction; the
    session advisory lock taken in it keeps other workers off the row while
    we talk to the rail, and goes away with our connection if we are killed.
    Returns the row, or None when it is done or another worker has it.
    """
    with db.transaction():
        if MISTAKE == "no-claim":
            row = listed
        else:
            r = db.execute(
                "SELECT id, account_id, amount_kobo, reference FROM payout_outbox"
                " WHERE id = %s AND status = 'pending' FOR UPDATE SKIP LOCKED",
                (listed.id,)).fetchone()
            if r is None:
                return None
            if not db.execute("SELECT pg_try_advisory_lock(%s, %s)",
                              (LOCK_CLASS, listed.id)).fetchone()[0]:
                return None
            row = Row(*r)
            row.locked = True
        if row.reference is None:
            row.reference = new_reference(row.id)
            db.execute("UPDATE payout_outbox SET reference = %s WHERE id = %s",
                       (row.reference, row.id))
    return row


def store_reference(db, row, ref):
    with db.transaction():
        db.execute("UPDATE payout_outbox SET reference = %s WHERE id = %s", (ref, row.id))
    row.reference = ref


def mark_done(db, row, ref):
    with db.transaction():
        db.execute("UPDATE payout_outbox SET status = 'done' WHERE id = %s", (row.id,))
    log("row %d done (ref %s)" % (row.id, ref))


def release(db, row):
    if row.locked:
        db.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_CLASS, row.id))
        row.locked = False


# ---------------------------------------------------------------- paying a row

def pay(db, rail, row, refused):
    """Work one claimed row until the rail says paid, refuses it, or we stop."""
    ask_first = row.had_reference     # sent before, perhaps: ask before sending
    wait = FIRST_WAIT
    while not stopping:
        ref = row.reference
        if MISTAKE == "new-reference-per-attempt":
            ref = new_reference(row.id)
            store_reference(db, row, ref)

        if ask_first:
            code, doc, text = rail.get(ref)
            log("row %d ref %s GET -> %s" % (row.id, ref, text))
            if code == 200 and isinstance(doc, dict) and doc.get("status") == "paid":
                if doc.get("account") != row.account_id or doc.get("amountKobo") != row.amount_kobo:
                    log("row %d WARNING: rail reports %s paid with account %r amount %r"
                        % (row.id, ref, doc.get("account"), doc.get("amountKobo")))
                mark_done(db, row, ref)
                return
            if code == 404:
                ask_first = False          # never received: safe to send
            else:                          # 5xx, no answer, not (yet) paid: ask later
                if MISTAKE != "no-backoff":  # MISTAKE no-backoff: straight on
                    nap(wait)
                wait = min(wait * 2, MAX_WAIT)
                continue

        code, doc, text = rail.post(row, ref)
        log("row %d ref %s POST -> %s" % (row.id, ref, text))
        if code == 201 or MISTAKE == "done-on-failure":
            mark_done(db, row, ref)
            return
        if code == 422:
            refused.add(row.id)
            log("row %d REFUSED by the rail (%s): left pending, not sent again by this run"
                % (row.id, text))
            return
        # 409, 5xx, no answer, anything unexpected: the outcome is unknown
        if MISTAKE == "resend-without-asking":
            if code == 409:
                mark_done(db, row, ref)
                return
        else:
            ask_first = True
        if MISTAKE != "no-backoff":  # MISTAKE no-backoff: straight on
            nap(wait)
        wait = min(wait * 2, MAX_WAIT)


# ---------------------------------------------------------------- main loop

def main():
    if MISTAKE and MISTAKE not in MISTAKES:
        log("unknown WORKER_MISTAKE %r (known: %s)" % (MISTAKE, ", ".join(MISTAKES)))
        return 2
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    database_url = os.environ["DATABASE_URL"]
    rail = Rail(os.environ["RAIL_URL"], int(os.environ.get("RAIL_TIMEOUT_MS") or 1000))
    log("started: rail %s, timeout %.0f ms%s" % (
        os.environ["RAIL_URL"], rail.timeout * 1000,
        ", WORKER_MISTAKE=" + MISTAKE if MISTAKE else ""))

    db = None
    todo = []           # pending rows listed by the last look
    worked = True       # did we take a row since that look?
    refused = set()     # ids the rail refused (422) in this run
    while not stopping:
        try:
            if db is None:
                db = psycopg.connect(database_url, autocommit=True,
                                     application_name="payout-worker")
                todo = []
            if not todo:
                if not worked:          # nothing (we could take) last time
                    nap(POLL_SECONDS)
                worked = False
                todo = list_pending(db, refused)
                continue
            row = claim(db, todo.pop(0))
            if row is None:
                continue        # done meanwhile, or another worker has it
            worked = True
            try:
                pay(db, rail, row, refused)
            finally:
                release(db, row)
        except Exception as e:      # database trouble above all: start afresh
            log("error: %s: %s; reconnecting" % (type(e).__name__, str(e).strip()))
            if db is not None:
                try:
                    db.close()      # also drops any advisory lock we held
                except Exception:
                    pass
            db = None
            nap(1.0)

    if db is not None:
        db.close()
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
