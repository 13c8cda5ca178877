package payoutgrade

import (
	"embed"

	"github.com/zudojs/bank/cmd/bank/internal/grade/starter"
)

// The worker starters live in _starters/LANG (a folder the go tool
// leaves alone), as the servers' do in package starter.
//
//go:embed all:_starters
var starterFiles embed.FS

// Starters are the workers a learner may start from (bank grade payout
// --starter LANG DIR): every row paid under a new reference, with no claim
// and no status enquiry yet; comments marked YOUR WORK say where the
// lesson goes.
var Starters = starter.Kit{FS: starterFiles, Root: "_starters", What: "worker",
	Next: map[string][2]string{
		"go":     {"go build -o worker . && bank grade payout -- ./worker", "Go 1.25 or newer"},
		"node":   {"npm install && bank grade payout -- node worker.js", "Node.js 18 or newer"},
		"python": {`pip install "psycopg[binary]" && bank grade payout -- python3 worker.py`, "Python 3.9 or newer"},
	},
	Passes: "It passes plain and fails the rest: your work is marked YOUR WORK in the\ncode, and its README.md says more."}
