// A starter for bank grade client: the lesson's app sending one transfer.
//
// It sends once, under a key of its own, and never retries: bank grade client
// passes plain and the refusals, and fails the checks where something goes
// wrong on the way. The lines marked YOUR WORK are where the lesson's
// client rules go (bank grade client --contract says them all).
//
// Run it the way the grader does:  bank grade client -- node client.mjs

const base = process.env.BANK_URL;
const token = process.env.BANK_TOKEN;
const body = process.env.TRANSFER;
const timeoutMs = Number(process.env.ATTEMPT_TIMEOUT_MS ?? 1000);

// The outcome as the contract wants it: a last line, and an exit status.
function report(outcome, code) {
  console.log(JSON.stringify(outcome));
  process.exit(code);
}

// YOUR WORK: the key belongs to the intent, and is kept with the draft.
// Before anything is sent, look in process.env.DRAFTS for an unfinished
// draft and, if there is one, resend its transfer under its key; else save
// the new key with the transfer, durably, first.
const key = crypto.randomUUID();
const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json", "Idempotency-Key": key };

// YOUR WORK: retry what may succeed later (no answer, 409, 429, 5xx) under
// the same key, waiting longer each time with a random part (backoff and
// jitter), never sooner than Retry-After; at most 10 attempts, then ask
// GET /transfers?key= before saying unknown.
let res;
try {
  res = await fetch(`${base}/transfers`, { method: "POST", headers, body, signal: AbortSignal.timeout(timeoutMs) });
} catch {
  report({ outcome: "unknown" }, 4); // no answer: it may have been made
}
const answer = await res.json().catch(() => ({}));
if (res.ok) {
  report({ outcome: "made", transferId: answer.transferId }, 0);
}
if (res.status >= 400 && res.status < 500 && res.status !== 409 && res.status !== 429) {
  // YOUR WORK: mark the draft finished.
  report({ outcome: "refused", status: res.status, error: answer.error ?? "" }, 3);
}
report({ outcome: "unknown" }, 4); // a 409, 429 or 5xx: it may yet be made
