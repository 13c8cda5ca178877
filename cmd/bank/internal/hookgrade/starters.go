package hookgrade

import (
	"embed"

	"github.com/zudojs/bank/cmd/bank/internal/grade/starter"
)

// The consumer starters live in _starters/LANG (a folder the go tool
// leaves alone), as the servers' do in package starter.
//
//go:embed all:_starters
var starterFiles embed.FS

// Starters are the consumers a learner may start from (bank grade webhook
// --starter LANG DIR): every delivery credited, with no signature check
// and no record of the events yet; comments marked YOUR WORK say where the
// lesson goes.
var Starters = starter.Kit{FS: starterFiles, Root: "_starters", What: "consumer",
	Next: map[string][2]string{
		"go":     {"go build -o consumer . && bank grade webhook -- ./consumer", "Go 1.25 or newer"},
		"node":   {"npm install && bank grade webhook -- node consumer.js", "Node.js 18 or newer"},
		"python": {`pip install "psycopg[binary]" && bank grade webhook -- python3 consumer.py`, "Python 3.9 or newer"},
	},
	Passes: "It passes out-of-order and fails the rest: your work is marked YOUR WORK in the\ncode, and its README.md says more."}
