package scenarios

import (
	"context"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
	"github.com/zudojs/bank/scenarios/lab/mistakes/onpurpose"
)

// NoLockExpiry: the server that claimed the key crashed, and a lock that
// never expires keeps every retry out, for ever: the user can never make
// this transfer.
var NoLockExpiry = &lab.Mistake{
	Mistake: mistakes.Must("no-lock-expiry"),
	Happens: "one crash blocks that key for ever, and no retry under it can ever complete the transfer",
	Fix:     "the lock expires (30 s) and a retry takes the key over",
	Why:     "server A claimed the key and crashed before its transfer committed. Nothing ever ends its claim: every retry of the tap, which carries the same key, finds it in progress and is told 409, for ever. (A new tap, with a new key, would go through: a second intent, made by hand, that the app has no way to tie to the first.)",
	Holds:   "the claim is a lock that expires (30 s here): a retry after that takes the key over, with a new lock id, and makes the transfer.",
	Blind:   neverBlind,
	Steps: crashStory(onpurpose.NoExpiry, "the server crashes holding the key",
		func(crash func(context.Context)) api.Hooks { return api.Hooks{AfterClaim: crash} },
		10*time.Second, 31*time.Second, 24*time.Hour),
}
