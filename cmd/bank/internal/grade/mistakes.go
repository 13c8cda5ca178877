package grade

import "github.com/zudojs/bank/scenarios/lab/mistakes"

// mistake is one of the lesson's mistakes, from the lab's one catalogue,
// as a failed check names it when its evidence fits: its name, its
// diagnosis, and the lab command that shows it done right.
type mistake = mistakes.Mistake

// The mistakes a check can name. A failure whose evidence fits none of
// them names none: the card says what was seen instead of guessing.
var (
	mTransfer          = mistakes.Must("transfer")
	mNoIdempotency     = mistakes.Must("no-keys")
	mNotMarked         = mistakes.Must("replay-not-marked")
	mReplayDiffers     = mistakes.Must("replay-differs")
	mRawFingerprint    = mistakes.Must("raw-fingerprint")
	mNoFingerprint     = mistakes.Must("no-fingerprint")
	mUnscoped          = mistakes.Must("unscoped-keys")
	mKeyOptional       = mistakes.Must("key-optional")
	mRefusalRerun      = mistakes.Must("refusal-not-stored")
	mReplay500         = mistakes.Must("replay-500")
	mCheckThenInsert   = mistakes.Must("check-then-insert")
	mNoExpiry          = mistakes.Must("no-lock-expiry")
	mSecondTransaction = mistakes.Must("second-transaction")
	mLockTTL           = mistakes.Must("lock-ttl-ignored")
	mNoFencing         = mistakes.Must("no-fencing")
	mMemoryKeys        = mistakes.Must("memory-keys")
	mKeysNotShared     = mistakes.Must("keys-not-shared")
	mNoLookup          = mistakes.Must("no-lookup")
	mNoRecovery        = mistakes.Must("no-recovery")
)
