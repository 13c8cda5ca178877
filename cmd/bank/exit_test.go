package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

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
		{"an unknown command", []string{"nosuch"}, nil, exitcode.Usage, `unknown command "nosuch"`},
		{"help for an unknown name", []string{"help", "nosuch"}, nil, exitcode.Usage, `no help for "nosuch"`},
		{"help", []string{"help"}, nil, exitcode.OK, ""},
		{"the version", []string{"--version"}, nil, exitcode.OK, ""},

		{"scenario as taught", []string{"scenario", "naive"}, nil, exitcode.OK, "verdict: failure reproduced"},
		{"scenario with PostgreSQL out of reach", []string{"scenario", "naive"}, map[string]string{"DATABASE_URL": unreachable}, exitcode.Env, "cannot reach PostgreSQL"},
		{"mistake as taught", []string{"mistake", "no-fencing"}, nil, exitcode.OK, "mistake reproduced"},
		{"mistake unknown", []string{"mistake", "no-fence"}, nil, exitcode.Usage, "(did you mean no-fencing?)"},
		{"exercise not yet", []string{"exercise", "ship", "--", "sh", "-c", "echo shipped"}, nil, exitcode.No, "not yet"},
		{"exercise, a program that cannot run", []string{"exercise", "ship", "--", "/nonexistent/program"}, nil, exitcode.Env, "cannot run /nonexistent/program"},
		{"quiz, no answers in a pipe", []string{"quiz"}, nil, exitcode.Usage, "--answers"},
		// (a quiz not passed, exit 1, and passed, exit 0: TestQuiz)
		{"grade, a server that cannot run", []string{"grade", "--", "no-such-server-command"}, nil, exitcode.Env, `cannot run "no-such-server-command"`},
		{"grade, no server named", []string{"grade"}, nil, exitcode.Usage, "name your server's command after --"},
		{"serve on a taken port", []string{"serve", "--addr", taken.Addr().String()}, nil, exitcode.Env, "cannot listen on"},
		{"serve, PORT not a port", []string{"serve"}, map[string]string{"PORT": "http"}, exitcode.Usage, `PORT="http" is not a port number`},
		{"lab beyond loopback", []string{"lab", "--addr", "0.0.0.0:8090"}, nil, exitcode.Usage, "loopback"},
		{"lab on a taken port", []string{"lab", "--addr", taken.Addr().String()}, nil, exitcode.Env, "cannot listen on"},
		{"send made", send(makes), nil, exitcode.OK, ""},
		{"send refused by the bank", send(refuses), nil, exitcode.No, "the bank refused the transfer: insufficient_funds"},
		{"send to a port nothing listens on", send("http://127.0.0.1:1"), nil, exitcode.Env, "the transfer was not sent"},
		{"send gives up, outcome unknown", send(breaks), nil, exitcode.Unknown, "the transfer's outcome is unknown"},
		{"send, nothing to resume", []string{"send", "--resume", "--state", filepath.Join(t.TempDir(), "none.json")}, nil, exitcode.Usage, "no pending transfer to resume"},
		{"status of a completed key", []string{"status", "--server", fakeLookup(t), "--state", filepath.Join(t.TempDir(), "none.json"), "some-key-000000001"}, nil, exitcode.OK, ""},
		{"status, server out of reach", []string{"status", "--server", "http://127.0.0.1:1", "--state", filepath.Join(t.TempDir(), "none.json"), "some-key-000000001"}, nil, exitcode.Env, "connection refused"},
		{"keys gc, PostgreSQL out of reach", []string{"keys", "gc", "--database-url", unreachable}, nil, exitcode.Env, "127.0.0.1:1"},
		{"bench, bad rounds", []string{"bench", "--rounds", "0"}, nil, exitcode.Usage, "--rounds must be at least 1"},
		{"torture, bad intents", []string{"torture", "--intents", "0"}, nil, exitcode.Usage, "--intents"},
		{"torture, too many intents", []string{"torture", "--intents", "100000000"}, nil, exitcode.Usage, "--intents may be at most 100000"},
		{"torture, too many replicas", []string{"torture", "--replicas", "500"}, nil, exitcode.Usage, "--replicas 8"},
	}
	// Every command refuses an unknown flag with exit 2.
	for _, name := range commandNames((&app{}).rootCommand()) {
		cases = append(cases, struct {
			name string
			args []string
			env  map[string]string
			want int
			says string
		}{name + " --bogus", []string{name, "--bogus"}, nil, exitcode.Usage, "unknown flag: --bogus"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := cli(t, c.env, c.args...)
			if r.code != c.want || !strings.Contains(r.stderr+r.stdout, c.says) {
				t.Errorf("bank %s: exit %d, want %d and %q\nstdout %s\nstderr %s", strings.Join(c.args, " "), r.code, c.want, c.says, r.stdout, r.stderr)
			}
			if c.want == exitcode.Usage {
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
	if code != exitcode.Interrupted || errb.String() != "bank: interrupted\n" {
		t.Fatalf("exit %d, stderr %q; want 130 and bank: interrupted", code, errb.String())
	}
}

// TestExitCodeOfTortureUnknown: a run too short for every fault kind to
// happen proves nothing: its verdict is unknown, exit 4, not the
// environment's 3.
func TestExitCodeOfTortureUnknown(t *testing.T) {
	t.Parallel()
	out, err := command(t, pgtest.CacheDir(t), "torture", "--intents", "5", "--clients", "1").CombinedOutput()
	if code := exitOf(err); code != exitcode.Unknown || !strings.Contains(string(out), "verdict: unknown") || !strings.Contains(string(out), "never happened") {
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
