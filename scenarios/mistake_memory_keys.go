package scenarios

import (
	"context"
	"errors"
	"time"

	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
)

// MemoryKeys: keys kept in a map inside the server process. Played with
// real bank serve processes: the server restarts between two attempts,
// and then two copies of the server share one database while the retry
// lands on the other copy. Either way the key is not there.
var MemoryKeys = &lab.Mistake{
	Mistake: mistakes.Must("memory-keys"),
	Happens: "lost on restart, and not shared with the other copies of the server",
	Fix:     "keys in PostgreSQL, shared by every copy of the server and kept across restarts",
	Why:     "a key kept in one process's memory is gone when that process restarts, and another copy of the server, behind the same load balancer, never had it. The retry finds no key, and the transfer is made again.",
	Holds:   "the keys are rows in PostgreSQL, which outlive any server process and are read by every copy: the retry finds the key completed and gets the stored answer.",
	Blind:   twiceBlind,
	Explain: map[string]string{
		"the server restarts":      "A real bank serve process makes Ada's ₦10,000 transfer and loses its answer; while the app waits to retry, the server restarts.",
		"two copies of the server": "Two bank serve processes on two ports share the bank, as copies behind a load balancer do. The first makes Ada's ₦5,000 transfer and loses its answer; the retry goes to the other copy.",
	},
	Steps: func(ctx context.Context, lab *lab.Lab, broken bool) error {
		mode := []string{}
		if broken {
			mode = []string{"--mistake", "memory-keys"} // BROKEN ON PURPOSE
		}
		lab.Intent("Ada's ₦10,000 tap", 1, 2, 1_000_000, 1).BrokenIf(broken)
		lab.Intent("Ada's ₦5,000 tap", 1, 2, 500_000, 1).BrokenIf(broken)

		lab.Step("the server restarts")
		first := lab.Serve(ctx, append(mode, "--lose-responses", "1")...)
		app := lab.Phone(first.Addr)
		app.Sleep = func(ctx context.Context, d time.Duration) error {
			port := first.Addr[len("http://127.0.0.1:"):]
			if err := first.Stop(); err != nil && !isSignal(err) {
				return err
			}
			first = lab.Serve(ctx, append(mode, "--addr", "127.0.0.1:"+port)...)
			lab.Say("the server restarted")
			return nil
		}
		sendAndShow(ctx, lab, app, adaPaysBola)
		lab.Say("transfers of ₦10,000 the bank made for this one tap: %d", lab.Count(ctx, "SELECT count(*) FROM transfers WHERE amount_kobo = 1000000"))

		lab.Step("two copies of the server")
		one := lab.Serve(ctx, append(mode, "--lose-responses", "1")...)
		two := lab.Serve(ctx, mode...)
		lab.Lane(two.Addr, "other copy")
		app = lab.Phone(one.Addr)
		app.Sleep = func(context.Context, time.Duration) error {
			app.BaseURL = two.Addr
			lab.Say("the load balancer sends the retry to the other copy")
			return nil
		}
		sendAndShow(ctx, lab, app, `{"from": 1, "to": 2, "amountKobo": 500000}`)
		lab.Say("transfers of ₦5,000 the bank made for this one tap: %d", lab.Count(ctx, "SELECT count(*) FROM transfers WHERE amount_kobo = 500000"))
		lab.Balances(ctx, "")
		return nil
	},
}

func isSignal(err error) bool {
	var exit interface{ ExitCode() int }
	return errors.As(err, &exit)
}
