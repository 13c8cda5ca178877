package scenarios

import (
	"context"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
	"github.com/zudojs/bank/scenarios/lab/mistakes/onpurpose"
)

// SecondTransaction: the transfer commits, then the response is stored in
// a transaction of its own. The server crashes between the two commits:
// the key still says "in progress", and once its lock expires the retry
// takes it over and transfers again. In one transaction, the crash takes
// the transfer down with it.
var SecondTransaction = &lab.Mistake{
	Mistake: mistakes.Must("second-transaction"),
	Happens: "a crash between the two commits leaves a done transfer with no stored response; the retry transfers again",
	Fix:     "the transfer and the stored response commit in one transaction",
	Why:     "the transfer commits first, and the answer is stored by a second commit. A crash between the two leaves the money moved and the key in progress with no answer; once its lock expires, the retry takes the key over, finds nothing stored, and transfers again.",
	Holds:   "a crash takes the transfer and its stored answer together, or neither: here it undid both, so the key is in progress with no transfer behind it, and the retry that takes it over makes the only transfer.",
	Blind:   twiceBlind,
	Steps: crashStory(onpurpose.SecondTransaction, "the server crashes as it stores its answer",
		func(crash func(context.Context)) api.Hooks { return api.Hooks{BeforeStore: crash} },
		10*time.Second, 31*time.Second),
}
