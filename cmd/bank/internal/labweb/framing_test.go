package labweb_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestLabForbidsFraming: every answer of bank lab, its page, its API and
// its refusals, says that no other site may frame it.
func TestLabForbidsFraming(t *testing.T) {
	t.Parallel()
	addr := startLab(t)
	for _, c := range []struct{ method, path, origin, host string }{
		{"GET", "/", "", ""},
		{"GET", "/api/entries", "", ""},
		{"POST", "/api/run?kind=scenario&name=no-such-story", "", ""},
		{"POST", "/api/run?kind=scenario&name=crash", "http://evil.example", ""},
		{"GET", "/", "", "evil.example"},
		{"PUT", "/api/entries", "", ""},
		{"GET", "/nowhere", "", ""},
	} {
		req, _ := http.NewRequest(c.method, addr+c.path, nil)
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if csp, xfo := resp.Header.Get("Content-Security-Policy"), resp.Header.Get("X-Frame-Options"); !strings.Contains(csp, "frame-ancestors 'none'") || xfo != "DENY" {
			t.Errorf("%s %s (%d): Content-Security-Policy %q, X-Frame-Options %q", c.method, c.path, resp.StatusCode, csp, xfo)
		}
	}
}

// TestLabCannotBeFramed: the attack itself, in Chromium: a page of
// another origin (another port) frames bank lab. The browser must refuse
// to show it there: the frame holds the browser's error page, and the lab
// is the URL it could not load.
func TestLabCannotBeFramed(t *testing.T) {
	ctx := chrome(t)
	lab := startLab(t)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>a prize for you</title><iframe src="%s/" width="800" height="600"></iframe>`, lab)
	}))
	defer evil.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatal(err)
	}
	frames := func(ctx context.Context, t *chromedp.Target) (page.GetFrameTreeResult, error) {
		return cdp.Call(ctx, t, page.GetFrameTree, cdp.Empty{})
	}
	// A bound against a hang, not a speed goal.
	bound, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var child *cdp.Frame
	for child == nil {
		tree, err := chromedp.Run(bound, frames)
		if err != nil {
			t.Fatalf("the framing page's frames: %v", err)
		}
		if kids := tree.FrameTree.ChildFrames; len(kids) == 1 && kids[0].Frame.URL != "" && kids[0].Frame.URL != "about:blank" {
			child = kids[0].Frame
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if strings.HasPrefix(child.URL, lab) || !strings.HasPrefix(child.UnreachableURL, lab) {
		t.Fatalf("a page of another origin framed bank lab: the frame shows %q (could not load %q)", child.URL, child.UnreachableURL)
	}
}
