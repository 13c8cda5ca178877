package grade

// mistake is one of the lesson's mistakes (its table of failure cases,
// and a few of the transfer itself), as the grader names it when the
// evidence of a failed check fits it: the name, what it is in the
// lesson's words, and the lab command that shows it done right.
type mistake struct {
	Name string
	Text string
	See  string
}

// The mistakes a check can name. A failure whose evidence fits none of
// them names none: the card says what was seen instead of guessing.
var (
	mTransfer = mistake{"transfer",
		"the transfer itself is wrong, before any fault", "bank scenario atomic"}
	mNoIdempotency = mistake{"no-keys",
		"no idempotency: the retry ran the transfer again instead of replaying the stored answer", "bank scenario retry-safe"}
	mNotMarked = mistake{"replay-not-marked",
		"a replay is not marked Idempotent-Replayed: true, so a client cannot tell it from a new transfer", "bank scenario retry-safe"}
	mReplayDiffers = mistake{"replay-differs",
		"the stored answer is not sent back as it was first sent: a client that lost the first answer is told something else", "bank scenario retry-safe"}
	mRawFingerprint = mistake{"raw-fingerprint",
		"the fingerprint hashes the raw bytes, so the same request written differently looks like another", "bank scenario key-misuse"}
	mNoFingerprint = mistake{"no-fingerprint",
		"no fingerprint: a key's stored answer is replayed to whatever request comes with it", "bank mistake no-fingerprint"}
	mUnscoped = mistake{"unscoped-keys",
		"keys not scoped to their user: one user's key answers (or blocks) another user's request", "bank mistake unscoped-keys"}
	mKeyOptional = mistake{"key-optional",
		"a transfer without a key cannot be retried safely, so the API must refuse it", "bank scenario key-misuse"}
	mRefusalRerun = mistake{"refusal-not-stored",
		"only successes are stored: a refused request runs again on retry, and may now succeed", "bank scenario key-misuse"}
	mReplay500 = mistake{"replay-500",
		"a server error stored under the key and replayed: one brief outage became the key's answer for ever", "bank mistake replay-500"}
	mCheckThenInsert = mistake{"check-then-insert",
		"check, then insert: copies that came together all found no key and all ran; claim the key atomically", "bank scenario concurrent"}
	mNoExpiry = mistake{"no-lock-expiry",
		"a lock that never expires: the crashed request's key stays in progress for ever", "bank mistake no-lock-expiry"}
	mSecondTransaction = mistake{"second-transaction",
		"the answer stored outside the transfer's transaction: a crash between the transfer's commit and storing the answer leaves a done transfer with no stored answer, and the retry transfers again", "bank mistake second-transaction"}
	mLockTTL = mistake{"lock-ttl-ignored",
		"the lock does not last LOCK_TTL_MS: a retry takes the key over while the first request may still be working (or waits longer than the client was told)", "bank scenario short-lock"}
	mNoFencing = mistake{"no-fencing",
		"no fencing token (or one checked only after the work committed): the server that lost its lock still committed its work", "bank mistake no-fencing"}
	mMemoryKeys = mistake{"memory-keys",
		"keys kept in one server's memory: a restart forgets them, and another instance never sees them", "bank mistake memory-keys"}
	mKeysNotShared = mistake{"keys-not-shared",
		"a key in progress not shared between the instances (its claim or its lock kept in one server's memory, or the key not kept at all): a copy that reaches another instance while the first works runs again", "bank mistake memory-keys"}
	mNoLookup = mistake{"no-lookup",
		"no way for a client to ask what became of a request it lost the answer to", "bank scenario unknown-outcome"}
	mNoRecovery = mistake{"no-recovery",
		"a server that does not get over a cancelled statement", "bank scenario atomic"}
)

// mistakeNamed finds one of the mistakes above by its name (as bank
// torture's diagnosis names them).
func mistakeNamed(name string) (mistake, bool) {
	for _, m := range []mistake{mTransfer, mNoIdempotency, mNotMarked, mReplayDiffers, mRawFingerprint, mNoFingerprint, mUnscoped,
		mKeyOptional, mRefusalRerun, mReplay500, mCheckThenInsert, mNoExpiry, mSecondTransaction, mLockTTL, mNoFencing,
		mMemoryKeys, mKeysNotShared, mNoLookup, mNoRecovery} {
		if m.Name == name {
			return m, true
		}
	}
	return mistake{}, false
}
