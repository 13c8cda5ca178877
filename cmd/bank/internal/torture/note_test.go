package torture

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestNoteClearsTheProgressLine: on a terminal the progress line and the
// notes share one line's worth of screen; a note clears it first, so the
// two never run together ("… handed out torture: 2s: killed a replica").
func TestNoteClearsTheProgressLine(t *testing.T) {
	var term bytes.Buffer
	r := &run{cfg: Config{Live: &term, Progress: &term}, start: time.Now()}
	term.WriteString("\rtorture: 10 of 100 intents handed out ")
	r.note("killed a replica (kill -9)")
	if got := term.String(); !strings.Contains(got, " handed out \r\033[Ktorture: ") {
		t.Errorf("the note does not clear the progress line first: %q", got)
	}
	var pipe bytes.Buffer // not a terminal: plain lines
	r = &run{cfg: Config{Progress: &pipe}, start: time.Now()}
	r.note("killed a replica (kill -9)")
	if got := pipe.String(); strings.Contains(got, "\033") || !strings.HasPrefix(got, "torture: ") {
		t.Errorf("a note in a pipe: %q", got)
	}
}
