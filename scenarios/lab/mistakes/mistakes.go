// Package mistakes is the lab's one catalogue of the lesson's mistakes.
// Each has one name, used everywhere: bank mistake NAME plays its story,
// bank serve --mistake NAME serves it (package onpurpose, the code made
// wrong on purpose), and bank grade and bank torture name it when what
// they saw fits it. None of them keeps a list of its own.
package mistakes

import "fmt"

// Mistake is one entry of the catalogue.
type Mistake struct {
	// Name is its one name, on the command line and in every report.
	Name string
	// Summary is the mistake in a few words (the lesson's table, where it
	// has a row there).
	Summary string
	// Diagnosis is what a grade card says it is, when the evidence of a
	// failed check fits it.
	Diagnosis string
	// Seen is what a torture run sees when a server makes it ("" where
	// torture cannot provoke it).
	Seen string
	// See is the lab command that shows it, and the fix.
	See string
}

// Story is whether bank mistake NAME plays it (its See).
func (m Mistake) Story() bool { return m.See == "bank mistake "+m.Name }

// Catalogue lists every mistake: first the rows of the lesson's table, in
// its order (each with a story of its own), then the others the judges
// name, each shown done right by a scenario.
var Catalogue = []Mistake{
	{Name: "new-key-per-attempt", Summary: "a new key for every attempt",
		Diagnosis: "a new key made for every attempt: every retry looks like a new request, so a lost answer leads to a second transfer",
		See:       "bank mistake new-key-per-attempt"},
	{Name: "memory-keys", Summary: "keys in a map in memory",
		Diagnosis: "keys kept in one server's memory: a restart forgets them, and another instance never sees them",
		Seen:      "a restarted replica forgot keys",
		See:       "bank mistake memory-keys"},
	{Name: "second-transaction", Summary: "storing the response in a second transaction",
		Diagnosis: "the answer stored outside the transfer's transaction: a crash between the transfer's commit and storing the answer leaves a done transfer with no stored answer, and the retry transfers again",
		Seen:      "a done transfer with no stored answer after a kill",
		See:       "bank mistake second-transaction"},
	{Name: "unscoped-keys", Summary: "keys not scoped to the user",
		Diagnosis: "keys not scoped to their user: one user's key answers (or blocks) another user's request",
		See:       "bank mistake unscoped-keys"},
	{Name: "no-fingerprint", Summary: "ignoring the request fingerprint",
		Diagnosis: "no fingerprint: a key's stored answer is replayed to whatever request comes with it",
		Seen:      "another request under a key got the first's answer",
		See:       "bank mistake no-fingerprint"},
	{Name: "replay-500", Summary: "replaying stored 500s",
		Diagnosis: "a server error stored under the key and replayed: one brief outage became the key's answer for ever",
		Seen:      "a stored 5xx replayed",
		See:       "bank mistake replay-500"},
	{Name: "no-lock-expiry", Summary: "a lock with no expiry",
		Diagnosis: "a lock that never expires: the crashed request's key stays in progress for ever",
		Seen:      "a key never settles: stuck in progress",
		See:       "bank mistake no-lock-expiry"},
	{Name: "no-fencing", Summary: "a lock expiry but no fencing token (a lock id that changes at each takeover)",
		Diagnosis: "no fencing token (or one checked only after the work committed): the server that lost its lock still committed its work",
		Seen:      "two holders both committed after a takeover",
		See:       "bank mistake no-fencing"},

	{Name: "no-keys", Summary: "the Idempotency-Key ignored: every delivery is a new transfer",
		Diagnosis: "no idempotency: the retry ran the transfer again instead of replaying the stored answer",
		Seen:      "retries ran again although nothing about the key was kept",
		See:       "bank scenario retry-safe"},
	{Name: "keys-not-shared", Summary: "a key in progress not shared between the instances",
		Diagnosis: "a key in progress not shared between the instances (its claim or its lock kept in one server's memory, or the key not kept at all): a copy that reaches another instance while the first works runs again",
		Seen:      "a copy at the other replica ran again",
		See:       "bank mistake memory-keys"},
	{Name: "check-then-insert", Summary: "check for the key, then insert it",
		Diagnosis: "check, then insert: copies that came together all found no key and all ran; claim the key atomically",
		Seen:      "concurrent copies both ran",
		See:       "bank scenario concurrent"},
	{Name: "lock-ttl-ignored", Summary: "a lock that does not last as long as it was given (its TTL)",
		Diagnosis: "the lock does not last LOCK_TTL_MS: a retry takes the key over while the first request may still be working (or waits longer than the client was told)",
		Seen:      "a retry took a key over before its lock expired",
		See:       "bank scenario short-lock"},
	{Name: "replay-differs", Summary: "a replay that is not the stored answer",
		Diagnosis: "the stored answer is not sent back as it was first sent: a client that lost the first answer is told something else",
		Seen:      "a replay's body differs from the first answer",
		See:       "bank scenario retry-safe"},
	{Name: "replay-not-marked", Summary: "a replay not marked as one",
		Diagnosis: "a replay is not marked Idempotent-Replayed: true, so a client cannot tell it from a new transfer",
		See:       "bank scenario retry-safe"},
	{Name: "raw-fingerprint", Summary: "a fingerprint of the raw bytes",
		Diagnosis: "the fingerprint hashes the raw bytes, so the same request written differently looks like another",
		See:       "bank scenario key-misuse"},
	{Name: "key-optional", Summary: "a transfer accepted without a key",
		Diagnosis: "a transfer without a key cannot be retried safely, so the API must refuse it",
		See:       "bank scenario key-misuse"},
	{Name: "refusal-not-stored", Summary: "only successes stored under the key",
		Diagnosis: "only successes are stored: a refused request runs again on retry, and may now succeed",
		See:       "bank scenario key-misuse"},
	{Name: "no-lookup", Summary: "no way to ask what became of a request",
		Diagnosis: "no way for a client to ask what became of a request it lost the answer to",
		See:       "bank scenario unknown-outcome"},
	{Name: "transfer", Summary: "the transfer itself wrong (the balances, the ledger or the receipt), before any fault",
		Diagnosis: "the transfer itself is wrong, before any fault",
		See:       "bank scenario atomic"},
	{Name: "no-recovery", Summary: "a server that stays broken after a cancelled statement",
		Diagnosis: "a server that does not get over a cancelled statement",
		See:       "bank mistake replay-500"},

	// The client's (bank grade client): the lesson's rules for the app.
	{Name: "retried-refusal", Summary: "retrying what can never succeed (a 400 or 422)",
		Diagnosis: "retried a refusal that can never succeed: the same request fails the same way, and every retry is load for nothing",
		See:       "bank exercise should-retry"},
	{Name: "no-retry", Summary: "giving up at the first failure that may pass",
		Diagnosis: "did not retry an answer that may succeed later (no answer, 409, 429 or a 5xx): the transfer is left to chance",
		See:       "bank scenario http"},
	{Name: "no-timeout", Summary: "waiting for ever on a server that never answers",
		Diagnosis: "no timeout: an attempt that gets no answer is waited on for ever, so the retry that would succeed never comes",
		See:       "bank scenario unknown-outcome"},
	{Name: "ignored-retry-after", Summary: "retrying before Retry-After",
		Diagnosis: "ignored Retry-After: the retry came before the server said it could take one",
		See:       "bank scenario backoff"},
	{Name: "no-backoff", Summary: "no backoff",
		Diagnosis: "no backoff: the waits between attempts do not grow, so a struggling server gets no room to recover",
		See:       "bank scenario backoff"},
	{Name: "lockstep", Summary: "a thousand phones retrying in lockstep (no jitter)",
		Diagnosis: "retries in lockstep (no jitter): clients that failed together retry together, at the same instants, and hit the server again all at once",
		See:       "bank scenario backoff"},
	{Name: "failed-not-unknown", Summary: "telling the user it failed when the outcome is unknown",
		Diagnosis: "reported failed when the outcome is unknown: the transfer may have been made, and the user, told it failed, sends it again",
		See:       "bank scenario unknown-outcome"},
	{Name: "key-not-in-draft", Summary: "a key not kept with the draft",
		Diagnosis: "the key was not kept with the draft: after the app restarted, the retry came under a new key, so it was a new transfer",
		See:       "bank help send"},
	{Name: "never-asked", Summary: "giving up without asking what became of it",
		Diagnosis: "gave up without asking what became of the transfer: one GET /transfers?key= would have told whether it was made, and the user is left with unknown",
		See:       "bank help status"},
	{Name: "reused-key", Summary: "one key for two intents",
		Diagnosis: "one key reused for a new intent: the second transfer the user asked for was answered with the first's receipt, and never made",
		See:       "bank scenario key-misuse"},

	// The webhook consumer's (bank grade webhook): the outline's inbound
	// webhooks.
	{Name: "no-event-dedupe", Summary: "no dedupe on the event id",
		Diagnosis: "no dedupe on the event id: every delivery of one event credited its payment again, and providers deliver at least once",
		See:       "bank scenario webhook"},
	{Name: "no-payment-dedupe", Summary: "no dedupe on the payment a second event is about",
		Diagnosis: "no dedupe on the payment reference: a second event about the same payment, with an id of its own, credited it again",
		See:       "bank scenario webhook"},
	{Name: "dedupe-race", Summary: "a dedupe two deliveries at once both pass",
		Diagnosis: "a dedupe that two deliveries at once both pass: each looked for the event, found none, and credited; only a unique key in the database stops the second",
		See:       "bank scenario webhook"},
	{Name: "event-outside-transaction", Summary: "the event recorded outside the credit's transaction",
		Diagnosis: "the event recorded outside the credit's transaction: a crash between the two either loses the credit for good (the event says done) or credits twice",
		See:       "bank scenario webhook"},
	{Name: "signature-not-checked", Summary: "a webhook's signature not checked",
		Diagnosis: "the signature not checked: anyone who knows the endpoint's address can credit any account",
		See:       "bank grade webhook --contract"},
	{Name: "stale-accepted", Summary: "an old signed delivery accepted",
		Diagnosis: "the timestamp not checked: a delivery recorded once can be sent again, any time later, and is taken as new",
		See:       "bank grade webhook --contract"},
	{Name: "ack-before-commit", Summary: "answering 2xx before the credit commits",
		Diagnosis: "answered 2xx before the credit committed: the provider takes the event as delivered, and a crash before the commit loses the credit for good",
		See:       "bank scenario webhook"},
	{Name: "order-assumed", Summary: "events expected in order",
		Diagnosis: "events expected in order: an event older than one already processed was skipped, but providers deliver in any order",
		See:       "bank scenario webhook"},
	{Name: "duplicate-refused", Summary: "a duplicate delivery answered with an error",
		Diagnosis: "a duplicate answered with an error, not 2xx: the provider takes it as not delivered and keeps sending it",
		See:       "bank scenario webhook"},

	// The payout worker's (bank grade payout): the outline's outbound
	// calls to the rails.
	{Name: "new-reference-per-attempt", Summary: "a new reference for every attempt at the rail",
		Diagnosis: "a new reference per attempt: the rail pays a reference once, and each new one is a new payout",
		See:       "bank scenario rails"},
	{Name: "resent-without-asking", Summary: "sending again without asking the rail",
		Diagnosis: "resent without asking the rail: after an answer that did not say whether the payout was made, the same reference went again before a status enquiry (GET /payouts/REFERENCE)",
		See:       "bank scenario rails"},
	{Name: "done-without-rail", Summary: "a payout marked done without the rail's word",
		Diagnosis: "marked done without the rail's word: a row the rail never paid is closed, and its money never leaves",
		See:       "bank scenario rails"},
	{Name: "no-claim", Summary: "two workers on one row",
		Diagnosis: "no claim on the row: two workers both sent it, and only a rail that refuses a reference twice, or luck, keeps it from being paid twice",
		See:       "bank scenario outbox"},
	{Name: "reference-not-stored", Summary: "the rail's reference not stored before sending",
		Diagnosis: "the reference not stored before the first send: the next try, or the worker started again after a crash, cannot find it, makes a new one, and the rail pays the row again",
		See:       "bank scenario rails"},
}

// Named finds a mistake by its name.
func Named(name string) (Mistake, bool) {
	for _, m := range Catalogue {
		if m.Name == name {
			return m, true
		}
	}
	return Mistake{}, false
}

// Must is the mistake of that name; a name not in the catalogue is a bug
// of the lab's (its readers name mistakes in package variables, so that
// such a bug stops every test at once).
func Must(name string) Mistake {
	m, ok := Named(name)
	if !ok {
		panic(fmt.Sprintf("mistakes: %q is not in the catalogue", name))
	}
	return m
}

// Stories are the mistakes bank mistake plays, in the lesson's order.
func Stories() []Mistake {
	var out []Mistake
	for _, m := range Catalogue {
		if m.Story() {
			out = append(out, m)
		}
	}
	return out
}
