// Package labweb is bank lab: a local web page for class that runs a
// scenario or a mistake on the real PostgreSQL and steps through its
// sequence diagram, beside the balances and the idempotency keys. The
// page's address names a story and a step (/#crash/3, counted from 1), so
// an instructor can open one from a slide. Everything it serves is
// embedded; it listens on loopback only.
package labweb

import (
	"context"
	_ "embed"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/zudojs/bank/scenarios/lab/render"
)

//go:embed index.html
var indexHTML string

// Entry is one thing the page can run.
type Entry struct {
	Kind    string `json:"kind"` // scenario or mistake
	Name    string `json:"name"`
	Summary string `json:"summary"`
}

// Runner runs one entry and returns its recordings (a mistake has two:
// broken and fixed).
type Runner func(ctx context.Context, kind, name string) ([]*render.Recording, error)

// Handler serves the page and its two endpoints.
func Handler(entries []Entry, run Runner) http.Handler {
	page := strings.Replace(indexHTML, "/*CSS*/", render.PageCSS, 1)
	var mu sync.Mutex // one run at a time: a class watches one story
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; frame-ancestors 'none'")
		w.Write([]byte(page))
	})
	m.HandleFunc("GET /api/entries", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, entries) })
	m.HandleFunc("POST /api/run", func(w http.ResponseWriter, r *http.Request) {
		kind, name := r.URL.Query().Get("kind"), r.URL.Query().Get("name")
		known := false
		for _, e := range entries {
			known = known || e.Kind == kind && e.Name == name
		}
		if !known {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no " + kind + " called " + name})
			return
		}
		mu.Lock()
		defer mu.Unlock()
		recs, err := run(r.Context(), kind, name)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, views(recs))
	})
	return guard(m)
}

// guard refuses requests that did not come from a page of this server: a
// Host that is not loopback (DNS rebinding) or a POST from another origin.
func guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if host != "127.0.0.1" && host != "localhost" && host != "::1" {
			http.Error(w, "bank lab answers on 127.0.0.1 only", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); r.Method != http.MethodGet && o != "" && o != "http://"+r.Host {
			http.Error(w, "bank lab takes requests from its own page only", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// runView is one recorded run as the page steps through it.
type runView struct {
	Name    string     `json:"name"`
	Summary string     `json:"summary"`
	Steps   []stepView `json:"steps"`
	Checks  []check    `json:"checks"`
}

type stepView struct {
	render.StepView
	SVG string `json:"svg"` // the diagram up to this step's end
}

type check struct {
	Name   string `json:"name"`
	Holds  bool   `json:"holds"`
	Detail string `json:"detail,omitempty"`
}

func views(recs []*render.Recording) []runView {
	var out []runView
	for _, r := range recs {
		v := runView{Name: r.Scenario.Name, Summary: r.Scenario.Summary}
		for i, s := range render.Steps(r) {
			v.Steps = append(v.Steps, stepView{StepView: s, SVG: render.SVG(r, i)})
		}
		for _, c := range r.Verdict.Results {
			v.Checks = append(v.Checks, check{c.Name, c.Holds, c.Detail})
		}
		out = append(out, v)
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
