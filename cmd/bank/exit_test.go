package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zudojs/bank/bank/pgserver/pgtest"
	"github.com/zudojs/bank/bank/procs"
)

// TestExitCodeOfEachError: every kind of error maps to its one code, and
// an error of no known kind is the lab's own (5), not a verdict (1).
func TestExitCodeOfEachError(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{nof("the bank refused the transfer"), exitNo},
		{fmt.Errorf("wrapped: %w", nof("no")), exitNo},
		{usagef("bad flag"), exitUsage},
		{envError("port taken"), exitEnv},
		{&pgconn.ConnectError{}, exitEnv},
		{fmt.Errorf("draft: %w", &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrPermission}), exitEnv},
		{&os.LinkError{Op: "rename", Old: "a", New: "b", Err: fs.ErrPermission}, exitEnv},
		{&net.OpError{Op: "dial", Err: errors.New("refused")}, exitEnv},
		{&pgconn.PgError{Code: "57P01"}, exitEnv}, // admin shutdown
		{&pgconn.PgError{Code: "53100"}, exitEnv}, // disk full
		{fmt.Errorf("replica: %w", &procs.NotStarted{Err: errors.New("bank did not start")}), exitEnv},
		{&pgconn.PgError{Code: "23505"}, exitInternal},
		{&pgconn.PgError{Code: "57014"}, exitInternal}, // a cancelled statement is no sign of the machine
		{silentExit{exitUnknown}, exitUnknown},
		{silentExit{exitNo}, exitNo},
		{context.Canceled, exitInterrupted},
		{errors.New("something the lab did not expect"), exitInternal},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%#v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestExitCodesThroughTheFrontDoor runs each command as a learner would
// and checks the code it ends with, for the outcomes that are cheap to
// reach: usage errors, the environment's failures, and the verdicts a
// short run can give.
func TestExitCodesThroughTheFrontDoor(t *testing.T) {
	t.Parallel()
	refuses := fakeBank(t, http.StatusUnprocessableEntity, `{"error":"insufficient_funds","message":"the balance is too low for this transfer"}`)
	makes := fakeBank(t, http.StatusCreated, `{"transferId":1,"from":1,"to":2,"amountKobo":100,"balanceKobo":4999900}`)
	breaks := fakeBank(t, http.StatusInternalServerError, `{"error":"internal_error","message":"retry"}`)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() }) // after the parallel subtests, not when this function returns
	unreachable := "postgres://nobody@127.0.0.1:1/x?connect_timeout=5"
	send := func(server string, extra ...string) []string {
		return append([]string{"send", "--server", server, "--from", "1", "--to", "2", "--amount-kobo", "100",
			"--state", filepath.Join(t.TempDir(), "draft.json"), "--backoff", "1ms", "--seed", "1"}, extra...)
	}
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want int
		says string // on stderr, or on stdout for a verdict printed there
	}{
		{"an unknown command", []string{"nosuch"}, nil, exitUsage, `unknown command "nosuch"`},
		{"help for an unknown name", []string{"help", "nosuch"}, nil, exitUsage, `no help for "nosuch"`},
		{"help", []string{"help"}, nil, exitOK, ""},
		{"the version", []string{"--version"}, nil, exitOK, ""},

		{"scenario as taught", []string{"scenario", "naive"}, nil, exitOK, "verdict: failure reproduced"},
		{"scenario with PostgreSQL out of reach", []string{"scenario", "naive"}, map[string]string{"DATABASE_URL": unreachable}, exitEnv, "cannot reach PostgreSQL"},
		{"mistake as taught", []string{"mistake", "no-fencing"}, nil, exitOK, "mistake reproduced"},
		{"mistake unknown", []string{"mistake", "no-fence"}, nil, exitUsage, "(did you mean no-fencing?)"},
		{"exercise not yet", []string{"exercise", "ship", "--", "sh", "-c", "echo shipped"}, nil, exitNo, "not yet"},
		{"exercise, a program that cannot run", []string{"exercise", "ship", "--", "/nonexistent/program"}, nil, exitEnv, "cannot run /nonexistent/program"},
		{"quiz, no answers in a pipe", []string{"quiz"}, nil, exitUsage, "--answers"},
		// (a quiz not passed, exit 1, and passed, exit 0: TestQuiz)
		{"grade, a server that cannot run", []string{"grade", "--", "no-such-server-command"}, nil, exitEnv, `cannot run "no-such-server-command"`},
		{"grade, no server named", []string{"grade"}, nil, exitUsage, "name your server's command after --"},
		{"serve on a taken port", []string{"serve", "--addr", taken.Addr().String()}, nil, exitEnv, "cannot listen on"},
		{"serve, PORT not a port", []string{"serve"}, map[string]string{"PORT": "http"}, exitUsage, `PORT="http" is not a port number`},
		{"lab beyond loopback", []string{"lab", "--addr", "0.0.0.0:8090"}, nil, exitUsage, "loopback"},
		{"lab on a taken port", []string{"lab", "--addr", taken.Addr().String()}, nil, exitEnv, "cannot listen on"},
		{"send made", send(makes), nil, exitOK, ""},
		{"send refused by the bank", send(refuses), nil, exitNo, "the bank refused the transfer: insufficient_funds"},
		{"send to a port nothing listens on", send("http://127.0.0.1:1"), nil, exitEnv, "the transfer was not sent"},
		{"send gives up, outcome unknown", send(breaks), nil, exitUnknown, "the transfer's outcome is unknown"},
		{"send, nothing to resume", []string{"send", "--resume", "--state", filepath.Join(t.TempDir(), "none.json")}, nil, exitUsage, "no pending transfer to resume"},
		{"status of a completed key", []string{"status", "--server", fakeLookup(t), "--state", filepath.Join(t.TempDir(), "none.json"), "some-key-000000001"}, nil, exitOK, ""},
		{"status, server out of reach", []string{"status", "--server", "http://127.0.0.1:1", "--state", filepath.Join(t.TempDir(), "none.json"), "some-key-000000001"}, nil, exitEnv, "connection refused"},
		{"keys gc, PostgreSQL out of reach", []string{"keys", "gc", "--database-url", unreachable}, nil, exitEnv, "127.0.0.1:1"},
		{"bench, bad rounds", []string{"bench", "--rounds", "0"}, nil, exitUsage, "--rounds must be at least 1"},
		{"torture, bad intents", []string{"torture", "--intents", "0"}, nil, exitUsage, "--intents"},
	}
	// Every command refuses an unknown flag with exit 2.
	for _, name := range commandNames((&app{}).rootCommand()) {
		cases = append(cases, struct {
			name string
			args []string
			env  map[string]string
			want int
			says string
		}{name + " --bogus", []string{name, "--bogus"}, nil, exitUsage, "unknown flag: --bogus"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := cli(t, c.env, c.args...)
			if r.code != c.want || !strings.Contains(r.stderr+r.stdout, c.says) {
				t.Errorf("bank %s: exit %d, want %d and %q\nstdout %s\nstderr %s", strings.Join(c.args, " "), r.code, c.want, c.says, r.stdout, r.stderr)
			}
			if c.want == exitUsage {
				oneLine(t, r)
			}
		})
	}
}

// TestExitCodeOfAnInterrupt: a run whose context is cancelled (Ctrl-C)
// ends with 130 and one line.
func TestExitCodeOfAnInterrupt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb strings.Builder
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return pgtest.AdminURL()
		}
		return ""
	}
	code := run(ctx, []string{"scenario", "naive"}, stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, getenv)
	if code != exitInterrupted || errb.String() != "bank: interrupted\n" {
		t.Fatalf("exit %d, stderr %q; want 130 and bank: interrupted", code, errb.String())
	}
}

// TestExitCodeOfTortureUnknown: a run too short for every fault kind to
// happen proves nothing: its verdict is unknown, exit 4, not the
// environment's 3.
func TestExitCodeOfTortureUnknown(t *testing.T) {
	t.Parallel()
	out, err := command(t, pgtest.CacheDir(t), "torture", "--intents", "5", "--clients", "1").CombinedOutput()
	if code := exitOf(err); code != exitUnknown || !strings.Contains(string(out), "verdict: unknown") || !strings.Contains(string(out), "never happened") {
		t.Fatalf("exit %d, want 4:\n%s", code, out)
	}
}

// fakeBank is a server that answers every transfer with status and body.
func fakeBank(t *testing.T, status int, body string) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// fakeLookup answers GET /transfers?key= with a completed transfer.
func fakeLookup(t *testing.T) string {
	t.Helper()
	return fakeBank(t, http.StatusOK, `{"key":"some-key-000000001","status":"completed","responseStatus":201,"responseBody":{"transferId":1}}`)
}
