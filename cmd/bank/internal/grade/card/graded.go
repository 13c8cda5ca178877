package card

import (
	"fmt"
	"strings"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
)

// Graded is what a card is the grade of: a learner's server (bank grade),
// client (bank grade client) or webhook consumer (bank grade webhook), its
// command, and what it was given.
type Graded struct {
	Of      string   // what was graded: "server" (when ""), "client" or "webhook"
	Command []string // the command graded
	Given   []string // what its environment was given, as NAME=VALUE
	// Checks are the grader's checks, by name and title, for the
	// workflows' tests.
	Checks []Listed
}

// Listed is a check as the workflows list it.
type Listed struct{ Name, Title string }

// Server is bank grade's card of command, given lockTTL.
func Server(command []string, lockTTL time.Duration) Graded {
	g := Graded{Command: command, Given: []string{fmt.Sprintf("LOCK_TTL_MS=%d", lockTTL.Milliseconds())}}
	for _, c := range grade.Checks {
		g.Checks = append(g.Checks, Listed{c.Name, c.Title})
	}
	return g
}

// tool is the command that grades: bank grade, bank grade client, bank
// grade webhook.
func (g Graded) tool() []string {
	if g.Of == "" || g.Of == "server" {
		return []string{"bank", "grade"}
	}
	return []string{"bank", "grade", g.Of}
}

// of is what was graded, in a word: server, client or consumer.
func (g Graded) of() string {
	switch g.Of {
	case "":
		return "server"
	case "webhook":
		return "consumer"
	}
	return g.Of
}

func (g Graded) command() string { return strings.Join(g.Command, " ") }
