package scenarios_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// cutAt is a sink that cancels the run's context when its event number
// at arrives: Ctrl-C (or a browser leaving bank lab) at that moment of
// the story. It keeps the kind of every event it saw.
type cutAt struct {
	at     int // 0: never
	kinds  []string
	cancel context.CancelFunc
	cut    chan struct{} // closed at the cut
}

func (c *cutAt) Event(e lab.Event) {
	if c.kinds = append(c.kinds, e.Kind); len(c.kinds) == c.at {
		c.cancel()
		close(c.cut)
	}
}

// maxCuts bounds the runs each story is cut in: the test makes a
// database for every run, and a version of it that cut every story at
// every one of its events made thousands (on a slot in /dev/shm).
const maxCuts = 12

// cutPoints are the moments a story is cut at, by event number, from the
// kinds of events of a whole run: before it does anything (its first
// event), as each step begins, and at the first thing each step says
// (where the step has started its work: a request held at a hook, a
// transaction open); at most maxCuts of them.
func cutPoints(kinds []string) []int {
	points := []int{1}
	for i, k := range kinds {
		if k == "step" && len(points) < maxCuts {
			points = append(points, i+1)
			if i+2 <= len(kinds) && len(points) < maxCuts {
				points = append(points, i+2)
			}
		}
	}
	return points
}

// TestInterruptAtEachStep cuts every story (each scenario and each
// mistake) short at a few moments of it (cutPoints) and requires it to
// end with the interrupt's error, or none (cut after its last query),
// without hanging. Then nothing of it may be left: no goroutine of the
// stories or of the lab, no bank serve replica, no database. Before,
// no-fencing cut anywhere before server A claimed the key waited for the
// claim for ever (bank lab hung on it, and so did bank mistake
// no-fencing).
func TestInterruptAtEachStep(t *testing.T) {
	type story struct {
		name string
		run  func(context.Context, lab.Sink) error
	}
	var stories []story
	for _, sc := range scenarios.All {
		stories = append(stories, story{"scenario " + sc.Name, func(ctx context.Context, s lab.Sink) error {
			_, err := lab.Run(ctx, pgtest.Clones(), sc, lab.Options{Sink: s, Bank: bankBinary})
			return err
		}})
	}
	for _, m := range scenarios.Mistakes {
		stories = append(stories, story{"mistake " + m.Name, func(ctx context.Context, s lab.Sink) error {
			_, err := lab.RunMistake(ctx, pgtest.Clones(), m, lab.Options{Sink: s, Bank: bankBinary})
			return err
		}})
	}
	var mu sync.Mutex
	runs, slowest := 0, time.Duration(0)
	t.Run("stories", func(t *testing.T) {
		for _, st := range stories {
			t.Run(st.name, func(t *testing.T) {
				t.Parallel()
				whole := &cutAt{}
				if err := st.run(context.Background(), whole); err != nil {
					t.Fatalf("a whole run failed: %v", err)
				}
				for _, at := range cutPoints(whole.kinds) {
					ctx, cancel := context.WithCancel(context.Background())
					cut := &cutAt{at: at, cancel: cancel, cut: make(chan struct{})}
					ended := make(chan error, 1)
					go func() { ended <- st.run(ctx, cut) }()
					var err error
					select {
					case err = <-ended:
					case <-cut.cut:
						// A bound against a hang, not a speed goal: the time
						// it took is logged below.
						was := time.Now()
						select {
						case err = <-ended:
						case <-time.After(30 * time.Second):
							buf := make([]byte, 1<<20)
							t.Fatalf("cut at event %d (%s), it had not ended 30 s later:\n%s", at, whole.kinds[at-1], buf[:runtime.Stack(buf, true)])
						}
						mu.Lock()
						slowest = max(slowest, time.Since(was))
						mu.Unlock()
					}
					cancel()
					mu.Lock()
					runs++
					mu.Unlock()
					if len(cut.kinds) < at {
						t.Errorf("cut at event %d of %d, it ended at event %d", at, len(whole.kinds), len(cut.kinds))
					}
					if err != nil && !errors.Is(err, context.Canceled) {
						t.Errorf("cut at event %d (%s), it ended with %v, not the interrupt", at, whole.kinds[at-1], err)
					}
				}
			})
		}
	})
	t.Logf("%d stories, %d runs cut short; the slowest ended %v after its cut", len(stories), runs, slowest.Round(time.Millisecond))
	if left := storyGoroutines(); left != "" {
		t.Errorf("goroutines of the stories outlived them:\n%s", left)
	}
	if left := serveChildren(); len(left) > 0 {
		t.Errorf("bank serve replicas outlived their stories: %v", left)
	}
	// Their databases are dropped, at once or behind them (on the lab's
	// own server): none is left. (The worker that drops them behind once
	// stopped after a minute: this test, which runs longer with -race,
	// left 324.)
	conn, err := pgx.Connect(context.Background(), pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var left int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE starts_with(datname, 'bank_s_')").Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d databases of the stories are still there 30 s after they ended", left)
			break
		}
	}
}

// storyGoroutines are the goroutines still running code of the stories
// or the lab (not this test's), after a second's grace for those that are
// on their way out.
func storyGoroutines() string {
	var left []string
	for deadline := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		left = nil
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "zudojs/bank/scenarios.") || strings.Contains(g, "zudojs/bank/scenarios/lab.") || strings.Contains(g, "zudojs/bank/scenarios/lab/mistakes/onpurpose.") {
				if !strings.Contains(g, "TestInterruptAtEachStep") {
					left = append(left, g)
				}
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return strings.Join(left, "\n\n")
		}
	}
}

// serveChildren are this process's children that run bank serve (Linux;
// elsewhere none are found).
func serveChildren() []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		stat, err := os.ReadFile(d + "/stat")
		i := strings.LastIndexByte(string(stat), ')')
		if err != nil || i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:])) // state, ppid, …
		if len(f) < 2 || f[0] == "Z" || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if cmd, _ := os.ReadFile(d + "/cmdline"); strings.Contains(string(cmd), "\x00serve\x00") {
			out = append(out, fmt.Sprintf("%s: %s", filepath.Base(d), strings.ReplaceAll(string(cmd), "\x00", " ")))
		}
	}
	return out
}
