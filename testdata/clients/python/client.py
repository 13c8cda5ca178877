#!/usr/bin/env python3
"""Send one money transfer to the bank's HTTP API, retrying safely.

One run is one intent of the user's (one tap on Send). The run ends when the
client knows what became of the transfer, or gives up:

    made     exit 0   {"outcome":"made","transferId":N}
    refused  exit 3   {"outcome":"refused","status":422,"error":"..."}
    unknown  exit 4   {"outcome":"unknown"}

The outcome is the last line on standard output; progress goes to standard
error. Configuration comes from the environment:

    BANK_URL            the API, such as http://127.0.0.1:41234
    BANK_TOKEN          the sender's bearer token
    TRANSFER            the request's JSON body, sent unchanged
    DRAFTS              a folder of our own, where the draft is kept
    ATTEMPT_TIMEOUT_MS  how long one attempt may wait for its answer

Safety rests on the idempotency key: it is made once per intent, written to
the draft before the first attempt, and sent unchanged with every retry, so
the server moves the money once at most however many copies reach it.

CLIENT_MISTAKE (unset or empty for the correct client) selects a broken
variant on purpose, for testing graders: new-key-per-attempt,
retried-refusal, no-backoff or failed-not-unknown.
"""

import email.utils
import http.client
import json
import os
import random
import re
import signal
import socket
import sys
import threading
import time
import traceback
import urllib.parse
import uuid

# Exit statuses of the three outcomes, and of a bad configuration.
EXIT_MADE = 0
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_UNKNOWN = 4

MAX_ATTEMPTS = 10          # give up after this many attempts...
TOTAL_BUDGET_S = 60.0      # ...or when this much time has gone by
FIRST_BACKOFF_S = 0.050    # the lesson's 50, 100, 200 ms ...
DEFAULT_ATTEMPT_TIMEOUT_MS = 1000

DRAFT_NAME = "draft.json"
KEY_PATTERN = re.compile(r"^[A-Za-z0-9_-]{16,64}$")

MISTAKES = ("new-key-per-attempt", "retried-refusal", "no-backoff",
            "failed-not-unknown")


def log(message):
    """Progress for humans (and the grader's evidence), on standard error."""
    print("client: " + message, file=sys.stderr, flush=True)


class Interrupted(Exception):
    """SIGTERM or Ctrl-C: stop, and say what we know (unknown)."""


class UsageError(Exception):
    """The environment does not describe a transfer we can send."""


class DraftError(Exception):
    """A draft we cannot read: we will not guess its key, nor make a new one."""


# --------------------------------------------------------------------------
# Configuration

class Config:
    def __init__(self, env):
        self.bank_url = self._required(env, "BANK_URL")
        self.token = self._required(env, "BANK_TOKEN")
        self.transfer = self._required(env, "TRANSFER")
        self.drafts = self._required(env, "DRAFTS")

        raw = env.get("ATTEMPT_TIMEOUT_MS", "").strip()
        try:
            timeout_ms = int(raw) if raw else DEFAULT_ATTEMPT_TIMEOUT_MS
        except ValueError:
            raise UsageError("ATTEMPT_TIMEOUT_MS is not a whole number: %r" % raw)
        if timeout_ms <= 0:
            raise UsageError("ATTEMPT_TIMEOUT_MS must be above 0")
        self.attempt_timeout = timeout_ms / 1000.0

        url = urllib.parse.urlsplit(self.bank_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise UsageError("BANK_URL is not an http(s) URL: %r" % self.bank_url)
        self.scheme = url.scheme
        self.host = url.hostname
        self.port = url.port
        self.base_path = url.path.rstrip("/")

        self.mistake = env.get("CLIENT_MISTAKE", "").strip()
        if self.mistake and self.mistake not in MISTAKES:
            raise UsageError("unknown CLIENT_MISTAKE %r (one of: %s)"
                             % (self.mistake, ", ".join(MISTAKES)))

    @staticmethod
    def _required(env, name):
        value = env.get(name, "")
        if not value.strip():
            raise UsageError("%s is not set" % name)
        return value


# --------------------------------------------------------------------------
# The draft: the intent's key and transfer, kept on disk across restarts

class Drafts:
    """One draft file in DRAFTS. A pending draft is an intent whose outcome
    we do not know yet; a finished one records what became of it."""

    def __init__(self, folder):
        self.folder = folder
        self.path = os.path.join(folder, DRAFT_NAME)

    def load_pending(self):
        """The unfinished draft, or None if there is none (or it finished)."""
        try:
            with open(self.path, "r", encoding="utf-8") as f:
                draft = json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            # The file is replaced atomically, so this is not a torn write.
            # We cannot tell which key it held: refuse to guess a new one.
            raise DraftError("cannot read the draft %s: %s" % (self.path, e))
        if not isinstance(draft, dict) or draft.get("state") != "pending":
            return None
        key, transfer = draft.get("key"), draft.get("transfer")
        if not isinstance(key, str) or not KEY_PATTERN.match(key) \
                or not isinstance(transfer, str):
            raise DraftError("the draft %s is not one we wrote" % self.path)
        return draft

    def start(self, key, transfer):
        """Record a new intent, durably, before its first attempt."""
        draft = {"state": "pending", "key": key, "transfer": transfer,
                 "createdAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self._write(draft)
        return draft

    def finish(self, draft, outcome):
        """The outcome is known (made or refused): the intent is over."""
        done = dict(draft, state="finished", outcome=outcome)
        try:
            self._write(done)
        except OSError as e:
            # Not fatal: a later run resends the same key and gets the
            # stored answer replayed, so no money moves twice.
            log("could not mark the draft finished: %s" % e)

    def _write(self, draft):
        """Write to a temporary file, fsync, then rename over the draft, so
        that a crash at any point leaves the old draft or the new, whole."""
        os.makedirs(self.folder, exist_ok=True)
        tmp = "%s.tmp-%d" % (self.path, os.getpid())
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(draft, f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        try:  # make the rename itself durable
            fd = os.open(self.folder, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            pass


# --------------------------------------------------------------------------
# HTTP: one exchange, bounded by a deadline for the whole of it

class NoAnswer(Exception):
    """The attempt got no whole answer: refused, reset, closed, timed out."""


class Answer:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body

    def json(self):
        try:
            return json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None


def exchange(cfg, method, path, headers, body, timeout):
    """Send one request on a fresh connection and read the whole answer
    within `timeout` seconds, or raise NoAnswer."""
    cls = (http.client.HTTPSConnection if cfg.scheme == "https"
           else http.client.HTTPConnection)
    conn = cls(cfg.host, cfg.port, timeout=timeout)
    timed_out = threading.Event()

    def abort():
        # The socket timeout bounds each read; this bounds the whole
        # exchange, so a server that trickles bytes cannot hold us longer.
        timed_out.set()
        sock = conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    watchdog = threading.Timer(timeout, abort)
    watchdog.daemon = True
    watchdog.start()
    try:
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()  # the whole body, or IncompleteRead
        if timed_out.is_set():
            raise NoAnswer("timed out after %d ms" % (timeout * 1000))
        return Answer(resp.status, resp.reason, resp.headers, data)
    except (OSError, http.client.HTTPException) as e:
        if timed_out.is_set() or isinstance(e, socket.timeout):
            raise NoAnswer("timed out after %d ms" % (timeout * 1000))
        raise NoAnswer("%s: %s" % (type(e).__name__, e) if str(e)
                       else type(e).__name__)
    finally:
        watchdog.cancel()
        conn.close()


def retry_after_seconds(value):
    """Retry-After as seconds (a number, or an HTTP date), or None."""
    if value is None:
        return None
    value = value.strip()
    if re.match(r"^\d+(\.\d+)?$", value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def error_code(answer):
    """The error of a refusal: its code, else its message, else the reason."""
    body = answer.json()
    if isinstance(body, dict):
        for field in ("error", "message", "title", "detail"):
            if isinstance(body.get(field), str) and body[field]:
                return body[field]
    text = answer.body.decode("utf-8", "replace").strip()
    return text[:200] if text else (answer.reason or "HTTP %d" % answer.status)


def transfer_id_of(body, location=None):
    """The transferId of a 201, from its body, else from its Location."""
    if isinstance(body, dict):
        tid = body.get("transferId")
        if isinstance(tid, int) and not isinstance(tid, bool):
            return tid
    if location:
        m = re.search(r"/transfers/(\d+)$", location.strip())
        if m:
            return int(m.group(1))
    return None


# --------------------------------------------------------------------------
# Retry policy

def is_retryable(status, mistake):
    """Retried with the same key: 409, 429 and every 5xx. Never retried:
    the other 4xx, since the same request would fail the same way."""
    if status in (409, 429) or 500 <= status <= 599:
        return True
    if 400 <= status <= 499:
        return mistake == "retried-refusal"  # MISTAKE: retries refusals
    return False


class Backoff:
    """Waits between attempts: each longer than the one before, each with a
    random part, and never shorter than the server's Retry-After."""

    def __init__(self, mistake):
        self.mistake = mistake
        self.base = FIRST_BACKOFF_S

    def next_wait(self, retry_after):
        if self.mistake == "no-backoff":
            # MISTAKE: a fixed 100 ms, no growth, no jitter (Retry-After kept).
            return max(0.100, retry_after or 0.0)
        # Retry-After is a floor; the backoff keeps doubling from whichever
        # was longer, so every wait is longer than the last one.
        floor = max(self.base, retry_after or 0.0)
        # Jitter: up to half the floor on top, so that clients that failed
        # together spread out, yet the next floor (2x) still exceeds this wait.
        wait = floor + random.uniform(0.0, floor / 2.0)
        self.base = floor * 2.0
        return wait


# --------------------------------------------------------------------------
# The transfer

class Outcome:
    def __init__(self, kind, transfer_id=None, status=None, error=None):
        self.kind = kind
        self.transfer_id = transfer_id
        self.status = status
        self.error = error

    def line(self):
        if self.kind == "made":
            doc = {"outcome": "made", "transferId": self.transfer_id}
        elif self.kind == "refused":
            doc = {"outcome": "refused", "status": self.status,
                   "error": self.error}
        else:
            doc = {"outcome": "unknown"}
        return json.dumps(doc, separators=(",", ":"))

    def exit_status(self):
        return {"made": EXIT_MADE, "refused": EXIT_REFUSED}.get(
            self.kind, EXIT_UNKNOWN)

    def record(self):
        return json.loads(self.line())


def new_key():
    return str(uuid.uuid4())


class Client:
    def __init__(self, cfg):
        self.cfg = cfg
        self.started = time.monotonic()
        # Attempts stop early enough to leave the lookup its own timeout.
        self.deadline = self.started + TOTAL_BUDGET_S
        self.attempts_deadline = self.deadline - cfg.attempt_timeout - 0.5

    def headers(self, key=None):
        h = {"Authorization": "Bearer " + self.cfg.token,
             "Accept": "application/json",
             "User-Agent": "bank-transfer-client/1.0 (python)"}
        if key is not None:
            h["Content-Type"] = "application/json"
            h["Idempotency-Key"] = key
        return h

    def send(self, key, transfer):
        """Attempt the transfer until the outcome is known or we give up."""
        mistake = self.cfg.mistake
        path = self.cfg.base_path + "/transfers"
        body = transfer.encode("utf-8")  # the same bytes on every attempt
        backoff = Backoff(mistake)
        last_status, last_error = None, None

        for attempt in range(1, MAX_ATTEMPTS + 1):
            if attempt > 1 and mistake == "new-key-per-attempt":
                key = new_key()  # MISTAKE: a new key for every retry
            timeout = min(self.cfg.attempt_timeout,
                          max(0.001, self.attempts_deadline - time.monotonic()))
            began = time.monotonic()
            retry_after = None
            try:
                answer = exchange(self.cfg, "POST", path, self.headers(key),
                                  body, timeout)
            except NoAnswer as e:
                log("attempt %d/%d key=%s: no answer (%s)"
                    % (attempt, MAX_ATTEMPTS, key, e))
                last_status, last_error = None, "no_answer"
            else:
                status = answer.status
                note = ("replayed " if answer.headers.get(
                    "Idempotent-Replayed", "").lower() == "true" else "")
                if 200 <= status <= 299:
                    tid = transfer_id_of(answer.json(),
                                         answer.headers.get("Location"))
                    log("attempt %d/%d key=%s: %d %smade, transferId %s (%d ms)"
                        % (attempt, MAX_ATTEMPTS, key, status, note, tid,
                           (time.monotonic() - began) * 1000))
                    if tid is not None:
                        return Outcome("made", transfer_id=tid), key
                    # Made, but we cannot name it: a retry replays the answer.
                    last_status, last_error = status, "no_transfer_id"
                else:
                    code = error_code(answer)
                    if not is_retryable(status, mistake) and 400 <= status <= 499:
                        log("attempt %d/%d key=%s: %d %s%s, refused"
                            % (attempt, MAX_ATTEMPTS, key, status, note, code))
                        return Outcome("refused", status=status,
                                       error=code), key
                    # 409, 429, 5xx (and anything unexpected): retry.
                    retry_after = retry_after_seconds(
                        answer.headers.get("Retry-After"))
                    log("attempt %d/%d key=%s: %d %s%s%s"
                        % (attempt, MAX_ATTEMPTS, key, status, note, code,
                           "" if retry_after is None
                           else ", Retry-After %gs" % retry_after))
                    last_status, last_error = status, code

            if attempt == MAX_ATTEMPTS:
                log("%d attempts made, giving up" % MAX_ATTEMPTS)
                break
            wait = backoff.next_wait(retry_after)
            now = time.monotonic()
            if now + wait + self.cfg.attempt_timeout > self.attempts_deadline:
                log("no time for another attempt within %gs, giving up"
                    % TOTAL_BUDGET_S)
                break
            log("waiting %d ms before attempt %d" % (wait * 1000, attempt + 1))
            time.sleep(wait)

        if mistake == "failed-not-unknown":
            # MISTAKE: giving up reported as a refusal, with no lookup.
            return Outcome("refused", status=last_status or 0,
                           error=last_error or "gave_up"), key
        return self.lookup(key), key

    def lookup(self, key):
        """Before saying unknown, ask the server what became of the key."""
        timeout = min(self.cfg.attempt_timeout,
                      self.deadline - time.monotonic())
        if timeout <= 0:
            return Outcome("unknown")
        path = "%s/transfers?key=%s" % (self.cfg.base_path,
                                        urllib.parse.quote(key, safe=""))
        try:
            answer = exchange(self.cfg, "GET", path, self.headers(), None,
                              timeout)
        except NoAnswer as e:
            log("lookup key=%s: no answer (%s)" % (key, e))
            return Outcome("unknown")
        doc = answer.json()
        if answer.status != 200 or not isinstance(doc, dict):
            log("lookup key=%s: %d %s" % (key, answer.status,
                                          error_code(answer)))
            return Outcome("unknown")
        if doc.get("status") != "completed":
            log("lookup key=%s: %s" % (key, doc.get("status")))
            return Outcome("unknown")

        status = doc.get("responseStatus")
        stored = doc.get("responseBody")
        if isinstance(stored, str):  # the stored answer, as text
            try:
                stored = json.loads(stored)
            except ValueError:
                pass
        if not isinstance(status, int):
            log("lookup key=%s: completed, without a responseStatus" % key)
            return Outcome("unknown")
        if 200 <= status <= 299:
            tid = transfer_id_of(stored)
            log("lookup key=%s: completed %d, transferId %s" % (key, status, tid))
            if tid is not None:
                return Outcome("made", transfer_id=tid)
            return Outcome("unknown")
        if 400 <= status <= 499 and status not in (409, 429):
            err = (stored.get("error") or stored.get("message")
                   if isinstance(stored, dict) else None)
            err = err if isinstance(err, str) and err else "HTTP %d" % status
            log("lookup key=%s: completed %d %s" % (key, status, err))
            return Outcome("refused", status=status, error=err)
        log("lookup key=%s: completed %d, not an outcome" % (key, status))
        return Outcome("unknown")


def run(env):
    cfg = Config(env)
    drafts = Drafts(cfg.drafts)
    if cfg.mistake:
        log("CLIENT_MISTAKE=%s: a broken client, on purpose" % cfg.mistake)

    # An unfinished draft is the same intent after a restart: same key,
    # same transfer. Otherwise this run is a new intent with a new key.
    draft = drafts.load_pending()
    if draft is not None:
        if draft["transfer"] != cfg.transfer:
            log("TRANSFER differs from the unfinished draft's; "
                "finishing the draft's intent first")
        log("resuming the unfinished draft, key=%s" % draft["key"])
    else:
        draft = drafts.start(new_key(), cfg.transfer)
        log("new intent, key=%s" % draft["key"])

    client = Client(cfg)
    outcome, key = client.send(draft["key"], draft["transfer"])
    if outcome.kind in ("made", "refused"):
        drafts.finish(draft, outcome.record())
    else:
        log("outcome unknown: the draft stays, a later run resends key=%s"
            % key)
    return outcome


def main():
    def on_term(signum, frame):
        raise Interrupted("signal %d" % signum)
    signal.signal(signal.SIGTERM, on_term)

    try:
        outcome = run(os.environ)
    except UsageError as e:
        log("error: %s" % e)
        return EXIT_USAGE
    except DraftError as e:
        # An intent may be pending under a key we cannot read: sending under
        # a new key could move the money twice. Someone must look.
        log("error: %s" % e)
        outcome = Outcome("unknown")
    except (Interrupted, KeyboardInterrupt):
        # An attempt may have been in flight: we cannot say it failed.
        log("interrupted: the outcome is unknown")
        outcome = Outcome("unknown")
    except Exception:
        # A bug or a broken disk: say only what we know. A draft, if
        # written, stays for the next run to resume.
        log("unexpected error:\n" + traceback.format_exc().rstrip())
        outcome = Outcome("unknown")
    print(outcome.line(), flush=True)
    return outcome.exit_status()


if __name__ == "__main__":
    sys.exit(main())
