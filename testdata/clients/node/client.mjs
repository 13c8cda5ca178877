#!/usr/bin/env node
// client.mjs: send one money transfer to the bank's HTTP API, and retry it
// safely.
//
// One run is one intent of the user's (one tap on Send). The intent gets one
// Idempotency-Key, saved with the transfer in a draft file before the first
// attempt, so that a run restarted after a crash sends the same request under
// the same key. Failures that may pass (no answer, 409, 429, 5xx) are retried
// with growing, jittered waits that honour Retry-After; final answers (2xx,
// other 4xx) end the run. If the attempts run out, the client asks the bank
// what became of the key, and otherwise says honestly that it does not know.
//
// Environment: BANK_URL, BANK_TOKEN, TRANSFER (the JSON body), DRAFTS (a
// folder for the draft), ATTEMPT_TIMEOUT_MS (default 1000), and for the test
// corpus CLIENT_MISTAKE (empty: the correct client; see MISTAKES below).
//
// The last line on standard output is the outcome, with the exit status:
//   made     0  {"outcome":"made","transferId":N}
//   refused  3  {"outcome":"refused","status":422,"error":"insufficient_funds"}
//   unknown  4  {"outcome":"unknown"}
// Everything else (the story of the attempts) goes to standard error.
// A bad environment is exit 2, before anything is sent.

import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const MAX_ATTEMPTS = 10;
const TOTAL_BUDGET_MS = 60_000; // the whole run, lookup included
const BASE_DELAY_MS = 50; // first backoff: 50, 100, 200 ms …
const MAX_DELAY_MS = 2_000; // the backoff's base stops growing here
const MIN_ATTEMPT_MS = 100; // no point starting an attempt with less time
const LOOKUP_MAX_MS = 5_000; // the lookup's own timeout, at most
const SAFETY_MARGIN_MS = 500; // kept back so the run ends inside the budget

const EXIT = { made: 0, usage: 2, refused: 3, unknown: 4 };
const KEY_PATTERN = /^[A-Za-z0-9_-]{16,64}$/;
const DRAFT_FILE = 'draft.json';

// Broken variants, on purpose, for the test corpus. Each changes one thing.
const MISTAKES = {
  '': 'none: the correct client',
  lockstep: 'backoff without any jitter',
  'key-not-in-draft': 'the key lives in memory only; no draft is written',
  'ignored-retry-after': 'Retry-After is never read',
  'reused-key': 'the draft is never marked finished, so every run resumes it',
};

class UsageError extends Error {}

const log = (msg) => process.stderr.write(`client: ${msg}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------- config

function readConfig(env) {
  const missing = ['BANK_URL', 'BANK_TOKEN', 'TRANSFER', 'DRAFTS'].filter((n) => !env[n]);
  if (missing.length > 0) {
    throw new UsageError(`missing in the environment: ${missing.join(', ')}`);
  }

  let base;
  try {
    base = new URL(env.BANK_URL);
  } catch {
    throw new UsageError(`BANK_URL is not a URL: ${env.BANK_URL}`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new UsageError(`BANK_URL must be http or https: ${env.BANK_URL}`);
  }
  const root = base.href.replace(/\/+$/, '');

  let transfer;
  try {
    transfer = JSON.parse(env.TRANSFER);
  } catch {
    throw new UsageError('TRANSFER is not JSON');
  }
  if (transfer === null || typeof transfer !== 'object' || Array.isArray(transfer)) {
    throw new UsageError('TRANSFER must be one JSON object');
  }

  let attemptTimeoutMs = 1000;
  if (env.ATTEMPT_TIMEOUT_MS) {
    attemptTimeoutMs = Number(env.ATTEMPT_TIMEOUT_MS);
    if (!Number.isFinite(attemptTimeoutMs) || attemptTimeoutMs <= 0) {
      throw new UsageError(`ATTEMPT_TIMEOUT_MS must be a positive number: ${env.ATTEMPT_TIMEOUT_MS}`);
    }
  }

  const mistake = env.CLIENT_MISTAKE ?? '';
  if (!Object.hasOwn(MISTAKES, mistake)) {
    throw new UsageError(`unknown CLIENT_MISTAKE ${mistake}; one of: ${Object.keys(MISTAKES).filter(Boolean).join(', ')}`);
  }

  return {
    transfersUrl: `${root}/transfers`,
    token: env.BANK_TOKEN,
    transferBody: env.TRANSFER, // sent as given, byte for byte
    draftsDir: env.DRAFTS,
    attemptTimeoutMs,
    mistake,
  };
}

// ---------------------------------------------------------------- draft

// DraftStore keeps one draft, DRAFTS/draft.json:
//   {"version":1,"key":"…","transfer":"<the body>","state":"pending"|"finished", …}
// Writes go to a temporary file that is synced and then renamed over the
// draft, so a crash leaves either the old draft or the new one, never half.
class DraftStore {
  constructor(dir) {
    this.dir = dir;
    this.file = path.join(dir, DRAFT_FILE);
  }

  // load returns the draft, or null when there is none (or it is unusable).
  load() {
    let text;
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch (err) {
      if (err.code === 'ENOENT') return null;
      throw err;
    }
    let draft;
    try {
      draft = JSON.parse(text);
    } catch {
      draft = null;
    }
    if (!draft || typeof draft.key !== 'string' || !KEY_PATTERN.test(draft.key) || typeof draft.transfer !== 'string') {
      // Cannot happen through save(); keep the file for a human, start afresh.
      const aside = `${this.file}.unreadable-${Date.now()}`;
      fs.renameSync(this.file, aside);
      log(`draft unreadable, moved aside to ${aside}`);
      return null;
    }
    return draft;
  }

  save(draft) {
    fs.mkdirSync(this.dir, { recursive: true });
    const tmp = path.join(this.dir, `.${DRAFT_FILE}.${process.pid}.${randomUUID()}.tmp`);
    const fd = fs.openSync(tmp, 'w', 0o600);
    try {
      fs.writeSync(fd, `${JSON.stringify(draft)}\n`);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    try {
      fs.renameSync(tmp, this.file);
    } catch (err) {
      fs.rmSync(tmp, { force: true });
      throw err;
    }
    syncDir(this.dir); // make the rename itself durable
  }
}

function syncDir(dir) {
  let fd;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch (err) {
    // Some file systems cannot sync a directory; the rename still happened.
    if (!['EISDIR', 'EINVAL', 'EPERM', 'EBADF'].includes(err.code)) throw err;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

// ---------------------------------------------------------------- HTTP

// warmUpFetch loads fetch's machinery (lazily loaded by Node, which can take
// hundreds of ms on a busy machine), so that the first attempt's timeout is
// spent waiting for the bank, not for Node.
async function warmUpFetch() {
  try {
    await (await fetch('data:,')).arrayBuffer();
  } catch {
    // Not needed for correctness.
  }
}

// attempt sends the transfer once. It resolves to the server's answer
// ({status, retryAfter, text}) or to {noAnswer: reason}; it never throws.
async function attempt(cfg, key, body, timeoutMs) {
  try {
    const res = await fetch(cfg.transfersUrl, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${cfg.token}`,
        'Content-Type': 'application/json',
        'Idempotency-Key': key,
      },
      body,
      redirect: 'manual', // a redirect is not an answer to follow with money
      signal: AbortSignal.timeout(timeoutMs), // covers reading the body too
    });
    const text = await res.text();
    const retryAfter = cfg.mistake === 'ignored-retry-after' ? null : res.headers.get('retry-after');
    return { status: res.status, retryAfter, text };
  } catch (err) {
    return { noAnswer: describeFailure(err, timeoutMs) };
  }
}

function describeFailure(err, timeoutMs) {
  if (err?.name === 'TimeoutError' || err?.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  const cause = err?.cause;
  return cause?.code ? `${cause.code}${cause.message ? ` (${cause.message})` : ''}` : String(err?.message ?? err);
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

// retryAfterMs reads Retry-After: delay-seconds, or an HTTP date.
function retryAfterMs(value) {
  if (value == null) return 0;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.ceil(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? 0 : Math.max(0, at - Date.now());
}

const made = (transferId) => ({ outcome: 'made', transferId });
const refused = (status, error) => ({ outcome: 'refused', status, error });
const UNKNOWN = { outcome: 'unknown' };

// errorOf names a refusal: the error code, else the message, else the status.
function errorOf(status, json, text) {
  if (json && typeof json === 'object') {
    for (const field of ['error', 'code', 'message', 'title', 'detail']) {
      if (typeof json[field] === 'string' && json[field]) return json[field];
    }
  }
  const plain = (text ?? '').trim().split('\n')[0].slice(0, 200);
  return plain || `HTTP ${status}`;
}

// classify turns one answer into an outcome, or into a reason to retry.
function classify(answer) {
  if (answer.noAnswer) return { retry: true, why: answer.noAnswer };

  const { status, text } = answer;
  const json = parseJson(text);
  const code = json && typeof json.error === 'string' ? ` ${json.error}` : '';

  if (status >= 200 && status < 300) {
    if (Number.isSafeInteger(json?.transferId)) return { outcome: made(json.transferId) };
    return { retry: true, why: `${status} without a transferId` };
  }
  if (status === 409 || status === 429 || status >= 500) {
    return { retry: true, why: `${status}${code}`, retryAfterMs: retryAfterMs(answer.retryAfter) };
  }
  if (status >= 400) {
    // The same request would fail the same way: a final answer.
    return { outcome: refused(status, errorOf(status, json, text)) };
  }
  return { retry: true, why: `unexpected ${status}` }; // 1xx, 3xx
}

// ---------------------------------------------------------------- backoff

// nextWait is how long to wait after the n-th failure: what Retry-After asks
// for, plus a backoff that doubles (50, 100, 200 ms … up to 2 s) and has a
// random part as large again, so clients that failed together spread out.
function nextWait(failures, retryAfter, cfg) {
  const base = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (failures - 1));
  const jitter = cfg.mistake === 'lockstep' ? 0 : Math.random() * base;
  return Math.ceil((retryAfter ?? 0) + base + jitter);
}

// ---------------------------------------------------------------- the run

// sendTransfer makes up to MAX_ATTEMPTS attempts before deadline, and returns
// the outcome, or null when it never got a final answer.
async function sendTransfer(cfg, key, body, deadline) {
  for (let n = 1; n <= MAX_ATTEMPTS; n++) {
    const timeoutMs = Math.min(cfg.attemptTimeoutMs, deadline - Date.now());
    if (timeoutMs < MIN_ATTEMPT_MS) {
      log('no time left for another attempt');
      return null;
    }

    const verdict = classify(await attempt(cfg, key, body, timeoutMs));
    if (verdict.outcome) {
      log(`attempt ${n}/${MAX_ATTEMPTS}: ${JSON.stringify(verdict.outcome)}`);
      return verdict.outcome;
    }
    if (n === MAX_ATTEMPTS) {
      log(`attempt ${n}/${MAX_ATTEMPTS}: ${verdict.why}; no attempts left`);
      return null;
    }

    const wait = nextWait(n, verdict.retryAfterMs, cfg);
    if (Date.now() + wait + MIN_ATTEMPT_MS > deadline) {
      log(`attempt ${n}/${MAX_ATTEMPTS}: ${verdict.why}; a wait of ${wait} ms would pass the deadline`);
      return null;
    }
    const asked = verdict.retryAfterMs ? `, Retry-After ${verdict.retryAfterMs} ms` : '';
    log(`attempt ${n}/${MAX_ATTEMPTS}: ${verdict.why}${asked}; retrying in ${wait} ms`);
    await sleep(wait);
  }
  return null;
}

// lookUp asks the bank what became of the key: the stored answer if the
// request completed, else null (unknown).
async function lookUp(cfg, key, deadline) {
  const timeoutMs = Math.min(cfg.attemptTimeoutMs, LOOKUP_MAX_MS, deadline - Date.now());
  if (timeoutMs < MIN_ATTEMPT_MS) return null;
  try {
    const res = await fetch(`${cfg.transfersUrl}?key=${encodeURIComponent(key)}`, {
      headers: { Authorization: `Bearer ${cfg.token}` },
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    const json = parseJson(await res.text());
    if (res.status !== 200 || json?.status !== 'completed') {
      log(`lookup: ${res.status} ${json?.status ?? json?.error ?? ''}`.trimEnd());
      return null;
    }
    const status = json.responseStatus;
    const stored = typeof json.responseBody === 'string' ? parseJson(json.responseBody) : json.responseBody;
    log(`lookup: completed with ${status}`);
    if (status >= 200 && status < 300 && Number.isSafeInteger(stored?.transferId)) return made(stored.transferId);
    if (status >= 400 && status < 500 && status !== 409 && status !== 429) {
      return refused(status, errorOf(status, stored, typeof json.responseBody === 'string' ? json.responseBody : ''));
    }
    return null;
  } catch (err) {
    log(`lookup: ${describeFailure(err, timeoutMs)}`);
    return null;
  }
}

// startIntent returns the intent to send: the unfinished draft's, if there is
// one (the same intent, after a restart), else a new key saved in a new draft.
function startIntent(cfg, store) {
  const old = store?.load();
  if (old && old.state !== 'finished') {
    log(`resuming the unfinished draft, key ${old.key}`);
    if (old.transfer !== cfg.transferBody) log('note: the draft\'s transfer differs from TRANSFER; sending the draft\'s');
    return { draft: old, key: old.key, body: old.transfer };
  }

  // A new tap on Send: a new key, made once, before the first attempt.
  const draft = {
    version: 1,
    key: randomUUID(),
    transfer: cfg.transferBody,
    state: 'pending',
    createdAt: new Date().toISOString(),
  };
  if (store) {
    store.save(draft);
    log(`new intent, key ${draft.key}, draft saved in ${store.file}`);
  } else {
    log(`new intent, key ${draft.key} (kept in memory only)`);
  }
  return { draft, key: draft.key, body: draft.transfer };
}

// finish marks the draft finished once the outcome is known.
function finish(cfg, store, draft, outcome) {
  if (!store || cfg.mistake === 'reused-key') return;
  try {
    store.save({ ...draft, state: 'finished', outcome, finishedAt: new Date().toISOString() });
  } catch (err) {
    // The outcome stands; a later run would resume the key and get a replay.
    log(`warning: could not mark the draft finished: ${err.message}`);
  }
}

async function main() {
  const startedAt = Date.now();
  const cfg = readConfig(process.env);
  if (cfg.mistake) log(`CLIENT_MISTAKE=${cfg.mistake}: ${MISTAKES[cfg.mistake]}`);

  const store = cfg.mistake === 'key-not-in-draft' ? null : new DraftStore(cfg.draftsDir);
  let intent;
  try {
    intent = startIntent(cfg, store);
  } catch (err) {
    // Nothing was sent: no draft, no attempt.
    throw new UsageError(`cannot keep the draft in ${cfg.draftsDir}: ${err.message}`);
  }

  await warmUpFetch();
  const lookupReserve = Math.min(cfg.attemptTimeoutMs, LOOKUP_MAX_MS) + SAFETY_MARGIN_MS;
  const attemptsDeadline = startedAt + TOTAL_BUDGET_MS - lookupReserve;
  let outcome = await sendTransfer(cfg, intent.key, intent.body, attemptsDeadline);
  if (!outcome) outcome = await lookUp(cfg, intent.key, startedAt + TOTAL_BUDGET_MS - SAFETY_MARGIN_MS);

  if (outcome) finish(cfg, store, intent.draft, outcome);
  else log(`outcome unknown: the draft stays, and the next run resumes key ${intent.key}`);
  return outcome ?? UNKNOWN;
}

function exitWith(line, code) {
  if (line) process.stdout.write(`${line}\n`, () => process.exit(code));
  else process.exit(code);
}

main().then(
  (outcome) => exitWith(JSON.stringify(outcome), EXIT[outcome.outcome]),
  (err) => {
    if (err instanceof UsageError) {
      log(err.message);
      exitWith('', EXIT.usage);
      return;
    }
    // A bug after the draft was written: the transfer may have been sent.
    log(`unexpected error: ${err?.stack ?? err}`);
    exitWith(JSON.stringify(UNKNOWN), EXIT.unknown);
  },
);
