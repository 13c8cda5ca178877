package card

import (
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// TestPageEscapes: what a server says reaches the page as text, never as
// markup, in the evidence and in the diagram.
func TestPageEscapes(t *testing.T) {
	t.Parallel()
	res := grade.Result{Name: "plain", Verdict: grade.Fail, Evidence: []string{`→ 200 <img src=x onerror=alert(1)>`}}
	res.Recording = &render.Recording{Scenario: &lab.Scenario{Name: "plain"}, Events: []lab.Event{
		{Kind: "message", From: "server A", To: "proxy", Text: `201 <script>alert(1)</script>`, Clock: "0.0 s"},
	}}
	var page strings.Builder
	if err := Page(&page, grade.Report{Results: []grade.Result{res}}, Server([]string{"./server"}, 2*time.Second)); err != nil {
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
