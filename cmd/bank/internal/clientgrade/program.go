package clientgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/zudojs/bank/scenarios/lab/procs"
)

// Exit statuses the contract gives each outcome.
const (
	exitMade    = 0
	exitRefused = 3
	exitUnknown = 4
)

// outcome is how a run of the client ended, as it reported it.
type outcome struct {
	Exited   bool   // it ended by itself (false: the grader killed it, or it ran past its bound)
	Code     int    // its exit status (-1 when killed by a signal)
	Line     string // its last line on standard output
	Said     string // made, refused or unknown: the line's outcome, when the line is one
	Transfer int64  // the line's transferId
	Status   int    // the line's status (refused)
	Error    string // the line's error (refused)
	Problem  string // what is wrong with the report, when something is ("" when the status and the line agree)
	Took     time.Duration
	Output   string // its last lines, standard output and error, for the evidence
}

// String says the outcome in a few words.
func (o outcome) String() string {
	switch {
	case !o.Exited:
		return "still running"
	case o.Problem != "":
		return fmt.Sprintf("exit %d, %s", o.Code, o.Problem)
	case o.Said == "made":
		return fmt.Sprintf("made (exit 0, transferId %d)", o.Transfer)
	case o.Said == "refused":
		return fmt.Sprintf("refused (exit 3, %d %s)", o.Status, o.Error)
	}
	return "unknown (exit 4)"
}

// client is one run of the learner's program.
type client struct {
	child  *procs.Child
	stdout *procs.Tail
	stderr *procs.Tail
	start  time.Time

	// For the check's diagram: the front it sent through, which of its
	// runs it was, when the grader killed it, and its outcome.
	front  *front
	n      int
	killed time.Time
	out    *outcome
}

// startClient starts the command with the contract's environment.
func startClient(ctx context.Context, command []string, env map[string]string) (*client, error) {
	c := &client{stdout: &procs.Tail{}, stderr: &procs.Tail{}, start: time.Now()}
	var vars []string
	for _, k := range []string{"BANK_URL", "BANK_TOKEN", "TRANSFER", "DRAFTS", "ATTEMPT_TIMEOUT_MS"} {
		vars = append(vars, k+"="+env[k])
	}
	// A client gets the bank's API, never a database: not the one bank
	// itself may have been given.
	vars = append(vars, "DATABASE_URL=")
	spec := procs.Spec{Path: command[0], Args: command[1:], Env: vars, Group: true,
		Stdout: c.stdout, Stderr: c.stderr, WaitDelay: time.Second, StopGrace: time.Second}
	child, err := spec.Start(context.WithoutCancel(ctx))
	if err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", command[0], err)
	}
	c.child = child
	go func() { // the grade's end ends it, as every child of the lab's
		select {
		case <-ctx.Done():
			child.Kill()
		case <-child.Exited():
		}
	}()
	return c, nil
}

// exited is closed when the client has ended.
func (c *client) exited() <-chan struct{} { return c.child.Exited() }

// kill ends the client at once (SIGKILL, its whole group), as a phone's
// battery would, and waits for it.
func (c *client) kill() {
	if c.killed.IsZero() {
		c.killed = time.Now()
	}
	c.child.Kill()
	<-c.child.Exited()
}

// wait waits for the client to end, for at most bound; past it the client
// is killed, and the outcome says it did not end.
func (c *client) wait(bound time.Duration) outcome {
	timer := time.NewTimer(bound)
	defer timer.Stop()
	ended := true
	select {
	case <-c.child.Exited():
	case <-timer.C:
		ended = false
		c.kill()
	}
	o := readOutcome(c.stdout.String(), c.child.Err())
	o.Exited = ended
	o.Took = time.Since(c.start)
	o.Output = lastLines(c.stdout.LastLines(6), c.stderr.LastLines(6))
	c.out = &o
	return o
}

// readOutcome reads the exit status and the last line on standard output.
func readOutcome(stdout string, err error) outcome {
	o := outcome{Code: 0}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		o.Code = ee.ExitCode()
	case err != nil:
		o.Code = -1
	}
	lines := strings.Split(strings.TrimRight(stdout, "\r\n"), "\n")
	o.Line = strings.TrimSpace(lines[len(lines)-1])
	var line struct {
		Outcome    string          `json:"outcome"`
		TransferID json.RawMessage `json:"transferId"`
		Status     json.RawMessage `json:"status"`
		Error      any             `json:"error"`
	}
	if o.Code < 0 {
		o.Problem = "killed by a signal"
		return o
	}
	if err := json.Unmarshal([]byte(o.Line), &line); err != nil || line.Outcome == "" {
		o.Problem = "no outcome line: its last line on standard output is " + quoteLine(o.Line)
		if o.Code != exitMade && o.Code != exitRefused && o.Code != exitUnknown {
			o.Problem = "it failed (exit " + strconv.Itoa(o.Code) + "), with no outcome line"
		}
		return o
	}
	o.Said = line.Outcome
	o.Transfer, _ = strconv.ParseInt(strings.Trim(string(line.TransferID), `"`), 10, 64)
	o.Status, _ = strconv.Atoi(strings.Trim(string(line.Status), `"`))
	if line.Error != nil {
		b, _ := json.Marshal(line.Error)
		o.Error = strings.Trim(string(b), `"`)
	}
	want := map[string]int{"made": exitMade, "refused": exitRefused, "unknown": exitUnknown}
	code, known := want[o.Said]
	switch {
	case !known:
		o.Problem = fmt.Sprintf("an outcome the contract does not have: %q (made, refused or unknown)", o.Said)
	case code != o.Code:
		o.Problem = fmt.Sprintf("the line says %s, but the exit status %d is not %s's %d", o.Said, o.Code, o.Said, code)
	case o.Said == "made" && o.Transfer <= 0:
		o.Problem = "made, without the transfer's transferId"
	}
	return o
}

func quoteLine(s string) string {
	if s == "" {
		return "empty"
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return strconv.Quote(s)
}

// lastLines is a client's last output, both streams, for the evidence.
func lastLines(stdout, stderr string) string {
	var parts []string
	if s := strings.TrimSpace(stdout); s != "" {
		parts = append(parts, "stdout: "+strings.ReplaceAll(s, "\n", " | "))
	}
	if s := strings.TrimSpace(stderr); s != "" {
		parts = append(parts, "stderr: "+strings.ReplaceAll(s, "\n", " | "))
	}
	return strings.Join(parts, "; ")
}

// copyAtMost copies up to n bytes of r to w, and drains the rest.
func copyAtMost(w io.Writer, r io.Reader, n int64) (int64, error) {
	got, err := io.Copy(w, io.LimitReader(r, n))
	io.Copy(io.Discard, r)
	return got, err
}

type readCloser struct{ io.Reader }

func (readCloser) Close() error { return nil }
