package clientgrade

import (
	"embed"

	"github.com/zudojs/bank/cmd/bank/internal/grade/starter"
)

// The client starters live in _starters/LANG (a folder the go tool leaves
// alone), as the servers' do in package starter.
//
//go:embed all:_starters
var starterFiles embed.FS

// Starters are the clients a learner may start from (bank grade client
// --starter LANG DIR): the lesson's app sending one transfer under a key
// of its own, with no draft and no retry yet, written from the contract
// alone; comments marked YOUR WORK say where the lesson's client rules go.
var Starters = starter.Kit{FS: starterFiles, Root: "_starters", What: "client",
	Next: map[string][2]string{
		"go":     {"go build -o client . && bank grade client -- ./client", "Go 1.25 or newer; no dependency"},
		"node":   {"bank grade client -- node client.mjs", "Node.js 18 or newer; no dependency"},
		"python": {"bank grade client -- python3 client.py", "Python 3.9 or newer; no dependency"},
	},
	Passes: "It passes plain, the refusals and one-key, and fails the checks where something\ngoes wrong on the way: your work is marked YOUR WORK in the code, and its\nREADME.md says more."}
