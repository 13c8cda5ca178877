// client.mjs: the lesson's app sending one transfer (one tap on Send), grown
// from the lesson's sendTransfer into a client for `bank grade client`.
//
// One intent, one Idempotency-Key, kept in a draft file in $DRAFTS before the
// first attempt (a run that finds an unfinished draft resends it under its
// key). Each attempt is bounded by ATTEMPT_TIMEOUT_MS; no answer, 409, 429 and
// 5xx are retried under the same key with the lesson's backoff and jitter
// (plus Retry-After); other 4xx are refused. At most 10 attempts within 60 s,
// then GET /transfers?key= before saying unknown.
//
// Outcome: the last line on stdout and the exit status:
//   {"outcome":"made","transferId":N}                   exit 0
//   {"outcome":"refused","status":S,"error":"..."}      exit 3
//   {"outcome":"unknown"}                               exit 4
// Progress lines go to stderr.
//
// Node.js 18+, built-ins only:  node client.mjs

import { randomUUID } from "node:crypto";
import { mkdir, open, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";

const MAX_ATTEMPTS = 10; // POSTs; the lookup is not one
const BUDGET_MS = 60_000; // give up (and look up) within this, from the start of the run

const base = process.env.BANK_URL;
const token = process.env.BANK_TOKEN;
const drafts = process.env.DRAFTS;
const timeoutMs = Number(process.env.ATTEMPT_TIMEOUT_MS) > 0 ? Number(process.env.ATTEMPT_TIMEOUT_MS) : 1000;
const startedAt = Date.now();

const log = (...args) => console.error(...args);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- the draft: the key kept with the transfer, durably, before anything is sent

const draftPath = () => join(drafts, "transfer-draft.json");

async function syncDir(dir) {
  try {
    const handle = await open(dir, "r");
    try { await handle.sync(); } finally { await handle.close(); }
  } catch { /* not every platform can fsync a directory */ }
}

async function saveDraft(draft) {
  await mkdir(drafts, { recursive: true });
  const tmp = `${draftPath()}.tmp`;
  const handle = await open(tmp, "w");
  try {
    await handle.writeFile(JSON.stringify(draft, null, 2) + "\n");
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, draftPath()); // atomic: the old draft or the new one, never half of one
  await syncDir(drafts);
}

async function loadDraft() {
  let text;
  try {
    text = await readFile(draftPath(), "utf8");
  } catch (error) {
    if (error.code === "ENOENT") return null;
    throw error;
  }
  const draft = JSON.parse(text);
  if (draft.state !== "pending" || typeof draft.key !== "string" || typeof draft.transfer !== "object") return null;
  return draft;
}

// The outcome is known (made or refused): the draft is finished, so remove it.
async function finishDraft() {
  try {
    await rm(draftPath(), { force: true });
    await syncDir(drafts);
  } catch (error) {
    log(`could not remove the finished draft (${error.message})`);
  }
}

// ---- reading answers

// The body as JSON (an empty object if it is not), read under the attempt's signal.
async function readJson(res) {
  const text = await res.text();
  try {
    const value = JSON.parse(text);
    return value && typeof value === "object" ? value : {};
  } catch {
    return {};
  }
}

// The server's error: its code (such as insufficient_funds), or its message.
function errorOf(answer, status) {
  const e = answer.error;
  if (typeof e === "string" && e) return e;
  if (e && typeof e === "object") return String(e.code ?? e.message ?? JSON.stringify(e));
  for (const field of ["code", "title", "detail", "message"]) {
    if (typeof answer[field] === "string" && answer[field]) return answer[field];
  }
  return `HTTP ${status}`;
}

// A refusal: a 4xx other than 409 and 429. The same request would fail the same way.
const isRefusal = (status) => status >= 400 && status < 500 && status !== 409 && status !== 429;

// Retry-After as a number of seconds (or an HTTP date), in ms; 0 if absent.
function retryAfterMs(header) {
  if (header == null) return 0;
  const value = header.trim();
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? 0 : Math.max(0, date - Date.now());
}

// What a 2xx answer or a stored answer says, or null if it says neither made nor refused.
function outcomeOf(status, answer) {
  if (status >= 200 && status < 300 && answer.transferId != null) {
    return { outcome: "made", transferId: answer.transferId };
  }
  if (isRefusal(status)) return { outcome: "refused", status, error: errorOf(answer, status) };
  return null;
}

// ---- sending: the lesson's sendTransfer, grown

async function sendTransfer(base, token, draft) {
  const key = draft.key; // made once for the intent, before its first attempt
  const body = JSON.stringify(draft.transfer); // the same body on every attempt
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    let waitAtLeast = 0; // what Retry-After asks
    try {
      const res = await fetch(`${base}/transfers`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "Idempotency-Key": key, "Content-Type": "application/json" },
        body,
        signal: AbortSignal.timeout(timeoutMs), // covers reading the body too
      });
      const answer = await readJson(res);
      const outcome = outcomeOf(res.status, answer);
      if (outcome) {
        log(`attempt ${attempt}:`, res.status, "replayed:", res.headers.get("idempotent-replayed") ?? "no");
        return outcome;
      }
      waitAtLeast = retryAfterMs(res.headers.get("retry-after"));
      log(`attempt ${attempt}:`, res.status, errorOf(answer, res.status), "will retry",
        waitAtLeast ? `(Retry-After: ${res.headers.get("retry-after")})` : "");
    } catch (error) {
      const why = error.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : `${error.name}: ${error.cause?.code ?? error.message}`;
      log(`attempt ${attempt}: network error (${why}), will retry`);
    }
    if (attempt === MAX_ATTEMPTS) break;
    const delay = 50 * 2 ** (attempt - 1) + Math.random() * 50 + waitAtLeast;
    // The next attempt, and the lookup after it, must still fit in the budget.
    if (Date.now() - startedAt + delay + 2 * timeoutMs > BUDGET_MS) {
      log(`attempt ${attempt}: no time left for another attempt within ${BUDGET_MS / 1000} s`);
      break;
    }
    log(`  waiting ${Math.round(delay)} ms`);
    await sleep(delay);
  }
  log(`gave up after the attempts; asking the bank what became of key ${key}`);
  return lookup(base, token, key);
}

// Before saying unknown: GET /transfers?key=KEY. Only a completed one tells.
async function lookup(base, token, key) {
  try {
    const res = await fetch(`${base}/transfers?key=${encodeURIComponent(key)}`, {
      headers: { Authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
    const answer = await readJson(res);
    log("lookup:", res.status, answer.status ?? "");
    if (res.status === 200 && answer.status === "completed") {
      let stored = answer.responseBody;
      if (typeof stored === "string") {
        try { stored = JSON.parse(stored); } catch { stored = {}; }
      }
      const outcome = outcomeOf(Number(answer.responseStatus), stored && typeof stored === "object" ? stored : {});
      if (outcome) return outcome;
    }
  } catch (error) {
    log(`lookup: no answer (${error.name})`);
  }
  return { outcome: "unknown" };
}

// ---- the run: one intent of the user's

function report(outcome) {
  const code = { made: 0, refused: 3, unknown: 4 }[outcome.outcome];
  process.stdout.write(JSON.stringify(outcome) + "\n", () => process.exit(code));
}

async function main() {
  if (!base || !token || !drafts) {
    log("BANK_URL, BANK_TOKEN and DRAFTS must be set");
    process.exit(2);
  }
  let draft = await loadDraft();
  if (draft) {
    log(`found an unfinished draft: resending its transfer under its key ${draft.key}`);
    let given = null;
    try { given = JSON.stringify(JSON.parse(process.env.TRANSFER)); } catch { /* the draft's transfer is sent anyway */ }
    if (given !== JSON.stringify(draft.transfer)) log("(TRANSFER differs from the draft's transfer; the draft's is the intent)");
  } else {
    draft = { key: randomUUID(), transfer: JSON.parse(process.env.TRANSFER), state: "pending", createdAt: new Date().toISOString() };
    await saveDraft(draft); // before the first attempt
    log(`new intent: key ${draft.key}, draft saved`);
  }
  const outcome = await sendTransfer(base, token, draft);
  if (outcome.outcome !== "unknown") await finishDraft(); // after unknown, it stays
  report(outcome);
}

main().catch((error) => {
  log("client error:", error);
  process.exit(1);
});
