package grade

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zudojs/bank/bank/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios/render"
)

var (
	buildOnce sync.Once
	bankBin   string
	buildErr  error
)

// gradeLabServer grades the lab's own server, bank serve with args, on
// checks, as bank grade does (but in this process, so that the results
// keep their recordings).
func gradeLabServer(t *testing.T, checks []string, args ...string) Report {
	t.Helper()
	buildOnce.Do(func() { bankBin, _, buildErr = pgtest.BuildBank("github.com/zudojs/bank/cmd/bank") })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		Command: append([]string{bankBin, "serve"}, args...), LockTTL: 2 * time.Second, StartTimeout: 30 * time.Second, Only: checks,
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
	inOrder(t, rep.Results[1].Recording,
		arrow{"app", "PostgreSQL", "lock Ada's row", ""},
		arrow{"app", "proxy", "POST ₦10,000 1→2, key grade-crash-000001", ""},
		arrow{"server A", "PostgreSQL", "waits on Ada's row", "in-progress"},
		arrow{"app", "server A", "kill (SIGKILL)", ""},
		arrow{"proxy", "app", "no answer", "error"},
		arrow{"app", "server A", "start again", ""},
		arrow{"server A", "proxy", "201 transfer 1", "takeover"},
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

// TestRecorderBounds: a recording keeps its first maxArrows arrows and
// counts the rest in one line; copies sent at once are drawn as one arrow
// each, counted; a request resent until answered is drawn as its first
// and last tries; and many goroutines may record at once.
func TestRecorderBounds(t *testing.T) {
	t.Parallel()
	var res Result
	r := record(&res, Check{Name: "torture"})
	for i := range 100 {
		r.arrow(actorApp, actorProxy, fmt.Sprintf("POST %d", i), "")
		r.arrow(actorProxy, actorApp, "201", "")
	}
	r.arrow(actorApp, "server A", "kill (SIGKILL)", "")
	r.finish()
	r.arrow(actorApp, actorProxy, "after the end", "")
	arrows, lines := 0, []string{}
	for _, e := range res.Recording.Events {
		switch e.Kind {
		case "message":
			arrows++
		case "line":
			lines = append(lines, e.Text)
		}
	}
	want := "… and 141 more arrows from here on, not drawn (the diagram keeps the first 60): 70 requests, 70 answers; kill (SIGKILL) ×1"
	if arrows != maxArrows || len(lines) != 1 || lines[0] != want {
		t.Errorf("%d arrows, lines %q; want %d arrows and %q", arrows, lines, maxArrows, want)
	}

	r = record(&res, Check{Name: "torture"})
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.arrow(actorApp, actorProxy, fmt.Sprintf("POST %d", i), "")
			r.arrow(actorProxy, actorApp, "201", "")
		}()
	}
	wg.Wait()
	if r.arrows+r.more != 400 {
		t.Errorf("of 400 arrows recorded at once, %d were kept and %d counted", r.arrows, r.more)
	}

	r = record(&res, Check{Name: "storm"})
	r.burstStart()
	for range 3 {
		r.arrow(actorApp, actorProxy, "POST", "")
	}
	r.arrow(actorProxy, actorApp, "201", "")
	r.arrow(actorProxy, actorApp, "409", "in-progress")
	r.arrow(actorProxy, actorApp, "409", "in-progress")
	r.burstEnd()
	var texts []string
	for _, e := range res.Recording.Events {
		texts = append(texts, e.Text)
	}
	if strings.Join(texts, "|") != "POST ×3|201|409 ×2" {
		t.Errorf("a burst drawn as %q", texts)
	}

	r = record(&res, Check{Name: "crash"})
	var tries []int
	for _, status := range []string{"409", "409", "409", "201"} {
		tries = append(tries, r.mark())
		r.arrow(actorApp, actorProxy, "POST", "")
		r.arrow(actorProxy, "server A", "passed on", "")
		r.arrow("server A", actorProxy, status, "")
		r.arrow(actorProxy, actorApp, status, "")
	}
	r.fold(tries)
	texts = nil
	for _, e := range res.Recording.Events {
		texts = append(texts, e.Text)
	}
	if got := strings.Join(texts, "|"); got != "POST|passed on|409|409|… 2 more tries of the same request, answered: 409 ×2|POST|passed on|201|201" {
		t.Errorf("tries drawn as %q", got)
	}
	if r.arrows != 8 {
		t.Errorf("%d arrows counted after the fold, want 8", r.arrows)
	}
}

// TestPageEscapes: what a server says reaches the page as text, never as
// markup, in the evidence and in the diagram.
func TestPageEscapes(t *testing.T) {
	t.Parallel()
	var res Result
	r := record(&res, Check{Name: "plain"})
	r.arrow("server A", actorProxy, `201 <script>alert(1)</script>`, "")
	res.Name, res.Verdict, res.Evidence = "plain", Fail, []string{`→ 200 <img src=x onerror=alert(1)>`}
	var page strings.Builder
	if err := (Report{Results: []Result{res}}).WritePage(&page, []string{"./server"}, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script>", "<img"} {
		if strings.Contains(page.String(), bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	if !strings.Contains(page.String(), `data-check="plain" data-verdict="fail"`) || !strings.Contains(page.String(), `<svg xmlns="http://www.w3.org/2000/svg" class="diagram"`) {
		t.Errorf("the check or its diagram is missing:\n%s", page.String())
	}
}
