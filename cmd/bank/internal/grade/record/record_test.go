package record

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestRecorderBounds: a recording keeps its first maxArrows arrows and
// counts the rest in one line; copies sent at once are drawn as one arrow
// each, counted; a request resent until answered is drawn as its first
// and last tries; and many goroutines may record at once.
func TestRecorderBounds(t *testing.T) {
	t.Parallel()
	r := New("torture", "", Wire{})
	for i := range 100 {
		r.Arrow(ActorApp, ActorProxy, fmt.Sprintf("POST %d", i), "")
		r.Arrow(ActorProxy, ActorApp, "201", "")
	}
	r.Arrow(ActorApp, "server A", "kill (SIGKILL)", "")
	r.Finish()
	r.Arrow(ActorApp, ActorProxy, "after the end", "")
	arrows, lines := 0, []string{}
	for _, e := range r.Recording().Events {
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

	r = New("torture", "", Wire{})
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Arrow(ActorApp, ActorProxy, fmt.Sprintf("POST %d", i), "")
			r.Arrow(ActorProxy, ActorApp, "201", "")
		}()
	}
	wg.Wait()
	if r.arrows+r.more != 400 {
		t.Errorf("of 400 arrows recorded at once, %d were kept and %d counted", r.arrows, r.more)
	}

	r = New("storm", "", Wire{})
	r.BurstStart()
	for range 3 {
		r.Arrow(ActorApp, ActorProxy, "POST", "")
	}
	r.Arrow(ActorProxy, ActorApp, "201", "")
	r.Arrow(ActorProxy, ActorApp, "409", "in-progress")
	r.Arrow(ActorProxy, ActorApp, "409", "in-progress")
	r.BurstEnd()
	var texts []string
	for _, e := range r.Recording().Events {
		texts = append(texts, e.Text)
	}
	if strings.Join(texts, "|") != "POST ×3|201|409 ×2" {
		t.Errorf("a burst drawn as %q", texts)
	}

	r = New("crash", "", Wire{})
	var tries []int
	for _, status := range []string{"409", "409", "409", "201"} {
		tries = append(tries, r.Mark())
		r.Arrow(ActorApp, ActorProxy, "POST", "")
		r.Arrow(ActorProxy, "server A", "passed on", "")
		r.Arrow("server A", ActorProxy, status, "")
		r.Arrow(ActorProxy, ActorApp, status, "")
	}
	r.Fold(tries)
	texts = nil
	for _, e := range r.Recording().Events {
		texts = append(texts, e.Text)
	}
	if got := strings.Join(texts, "|"); got != "POST|passed on|409|409|… 2 more tries of the same request, answered: 409 ×2|POST|passed on|201|201" {
		t.Errorf("tries drawn as %q", got)
	}
	if r.arrows != 8 {
		t.Errorf("%d arrows counted after the fold, want 8", r.arrows)
	}
}
