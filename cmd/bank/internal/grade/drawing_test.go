package grade

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios/lab/render"
)

var (
	buildOnce sync.Once
	bankBin   string
	buildErr  error
	removeBin = func() {} // the bank the tests built, removed by TestMain
)

// gradeLabServer grades the lab's own server, bank serve with args, on
// checks, as bank grade does (but in this process, so that the results
// keep their recordings).
func gradeLabServer(t *testing.T, checks []string, args ...string) Report {
	t.Helper()
	buildOnce.Do(func() {
		var remove func()
		if bankBin, remove, buildErr = pgtest.BuildBank("github.com/zudojs/bank/cmd/bank"); buildErr == nil {
			removeBin = remove
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return gradeCommand(t, checks, append([]string{bankBin, "serve"}, args...)...)
}

// gradeCommand grades the server command starts, on checks, with a 2 s
// lock, in this process.
func gradeCommand(t *testing.T, checks []string, command ...string) Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		Command: command, LockTTL: 2 * time.Second, StartTimeout: 30 * time.Second, Only: checks,
		NewDatabase: func(ctx context.Context, label string) (string, string, func(), error) {
			d, err := pgtest.Clones().NewDatabase(ctx, label)
			if err != nil {
				return "", "", nil, err
			}
			return d.URL, d.URL, func() { d.Drop(context.WithoutCancel(ctx)) }, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(checks) {
		t.Fatalf("%d results for %d checks", len(rep.Results), len(checks))
	}
	return rep
}

// arrow is what a test wants of one message: its lanes, the start of
// its text, and its mark.
type arrow struct{ from, to, text, mark string }

func (a arrow) String() string { return fmt.Sprintf("%s → %s %q [%s]", a.from, a.to, a.text, a.mark) }

// inOrder checks that a recording holds the arrows wanted, in that
// order (other arrows may come between them).
func inOrder(t *testing.T, rec *render.Recording, want ...arrow) {
	t.Helper()
	if rec == nil {
		t.Fatal("no recording")
	}
	var drawn strings.Builder
	i := 0
	for _, e := range rec.Events {
		if e.Kind != "message" {
			continue
		}
		fmt.Fprintf(&drawn, "  %s\n", arrow{e.From, e.To, e.Text, e.Mark})
		if i < len(want) && e.From == want[i].from && e.To == want[i].to && strings.HasPrefix(e.Text, want[i].text) && e.Mark == want[i].mark {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("the recording lacks %s (after the %d arrows before it); it holds:\n%s", want[i], i, drawn.String())
	}
}

// TestRecordingOfChecks: what the grader did and saw in a check is its
// recording, in order: for lost-response, the request, the server's 201,
// the reply lost at the proxy, the retry and its replayed answer; for
// crash, the grader's lock on Ada's row, the server's session seen
// waiting on it, the kill, the restart, and the retry's 201.
func TestRecordingOfChecks(t *testing.T) {
	t.Parallel()
	rep := gradeLabServer(t, []string{"lost-response", "crash"})
	post := "POST ₦10,000 1→2, key grade-lost-0000001"
	inOrder(t, rep.Results[0].Recording,
		arrow{"app", "proxy", post, ""},
		arrow{"proxy", "server A", "passed on", ""},
		arrow{"server A", "proxy", "201 transfer 1", ""},
		arrow{"proxy", "app", "201 transfer 1, never reaches the app", "lost"},
		arrow{"app", "proxy", post, ""},
		arrow{"proxy", "server A", "passed on", ""},
		arrow{"server A", "proxy", "201 transfer 1 (replayed)", "replayed"},
		arrow{"proxy", "app", "201 transfer 1 (replayed)", "replayed"},
	)
	// The retry's 201 is drawn a takeover where the grader saw the key in
	// progress first: a 409 to a retry sent before the lock expired. On a
	// busy machine the restart can outlast the 2 s lock, and the first
	// retry takes the key over with no 409 before it: drawn plain.
	takeover := ""
	for _, e := range rep.Results[1].Recording.Events {
		if e.Kind == "message" && e.From == "server A" && strings.HasPrefix(e.Text, "409") {
			takeover = "takeover"
		}
	}
	inOrder(t, rep.Results[1].Recording,
		arrow{"app", "PostgreSQL", "lock Ada's row", ""},
		arrow{"app", "proxy", "POST ₦10,000 1→2, key grade-crash-000001", ""},
		arrow{"server A", "PostgreSQL", "waits on Ada's row", "in-progress"},
		arrow{"app", "server A", "kill (SIGKILL)", ""},
		arrow{"proxy", "app", "no answer", "error"},
		arrow{"app", "server A", "start again", ""},
		arrow{"server A", "proxy", "201 transfer 1", takeover},
	)
	for _, r := range rep.Results {
		if r.Verdict != Pass {
			t.Errorf("%s: %s: %s", r.Name, r.Verdict, r.Why)
		}
		var text strings.Builder
		render.DrawDiagram(&text, r.Recording, false, 80)
		for _, line := range strings.Split(text.String(), "\n") {
			if n := len([]rune(line)); n > 80 {
				t.Errorf("%s: a line of %d columns in an 80-column diagram: %q", r.Name, n, line)
			}
		}
	}
}
