package scenarios

import (
	"context"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/wrong"
)

// NoLockExpiry: the server that claimed the key crashed, and a lock that
// never expires keeps every retry out, for ever: the user can never make
// this transfer.
var NoLockExpiry = &lab.Mistake{
	Name:    "no-lock-expiry",
	Summary: "a lock with no expiry",
	Happens: "one crash blocks that key for ever: the user can never complete that transfer",
	Fix:     "the lock expires (30 s) and a retry takes the key over",
	Blind:   neverBlind,
	Steps: crashStory(wrong.NoExpiry, "the server crashes holding the key",
		func(crash func(context.Context)) api.Hooks { return api.Hooks{AfterClaim: crash} },
		10*time.Second, 31*time.Second, 24*time.Hour),
}
