package labweb_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// gradeCheck is one check of a bank grade --html page, read from the page.
type gradeCheck struct {
	Name    string   `json:"name"`
	Verdict string   `json:"verdict"`
	Lanes   []string `json:"lanes"`
	Arrows  int      `json:"arrows"`
	Lost    int      `json:"lost"`
	Labels  string   `json:"labels"`
	Height  float64  `json:"height"` // of its diagram, as laid out
	Text    string   `json:"text"`
}

const readGradePage = `[...document.querySelectorAll("section.check")].map((s) => {
	const svg = s.querySelector("svg.diagram");
	return {
		name: s.dataset.check, verdict: s.dataset.verdict,
		lanes: svg ? [...svg.querySelectorAll("line.lane")].map((l) => l.dataset.actor) : [],
		arrows: svg ? svg.querySelectorAll("line.arrow").length : 0,
		lost: svg ? svg.querySelectorAll("line.arrow.lost").length : 0,
		labels: svg ? [...svg.querySelectorAll("text.label")].map((l) => l.textContent).join("\n") : "",
		height: svg ? svg.getBoundingClientRect().height : 0,
		text: s.innerText,
	};
})`

// TestGradePageInBrowser: bank grade --html, of the lab's own server on
// plain, lost-response and crash, makes a page that opens offline and
// shows each check's verdict, evidence and diagram: arrows in every
// diagram, the reply lost in lost-response's, the kill in crash's.
func TestGradePageInBrowser(t *testing.T) {
	ctx := chrome(t)
	page := filepath.Join(t.TempDir(), "grade.html")
	bank := bankBinary(t)
	ctx = openPage(ctx, t, bank, page, "grade", "--html", page, "--only", "plain,lost-response,crash", "--", bank, "serve")
	checks, err := chromedp.Run(ctx, chromedp.Evaluate[[]gradeCheck](readGradePage))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range checks {
		names = append(names, c.Name)
		if c.Verdict != "pass" || c.Arrows == 0 || c.Height < 100 || !strings.Contains(c.Text, "before: Ada ₦50,000") {
			t.Errorf("%s: verdict %s, %d arrows, a diagram %.0f px high; want a pass, its arrows and its evidence:\n%s", c.Name, c.Verdict, c.Arrows, c.Height, c.Text)
		}
		switch c.Name {
		case "lost-response":
			if c.Lost == 0 || !strings.Contains(c.Labels, "[LOST] 201 transfer 1, never reaches the app") || !strings.Contains(c.Labels, "[REPLAY] 201 transfer 1 (replayed)") {
				t.Errorf("lost-response: %d lost arrows; its labels:\n%s", c.Lost, c.Labels)
			}
		case "crash":
			if strings.Join(c.Lanes, ",") != "app,proxy,server A,PostgreSQL" || !strings.Contains(c.Labels, "kill (SIGKILL)") || !strings.Contains(c.Labels, "lock Ada's row") {
				t.Errorf("crash: lanes %v; its labels:\n%s", c.Lanes, c.Labels)
			}
		}
	}
	if strings.Join(names, ",") != "plain,lost-response,crash" {
		t.Errorf("the page shows the checks %v", names)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	notBlank(t, shot, "grade")
}
