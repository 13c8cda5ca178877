package api

import (
	"fmt"
	"net/http"
	"sync/atomic"
)

// Metrics are the server's counters, served at /metrics.
type Metrics struct {
	Requests, Replays, Conflicts, Unprocessable, Takeovers, Lost, Fenced, Limited, Unavailable atomic.Int64
}

func (s *Server) writeMetrics(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	if h, ok := s.Transfers.(interface{ Holding() int64 }); ok {
		fmt.Fprintf(w, "# HELP bank_holding_keys Requests holding a claimed key right now.\n# TYPE bank_holding_keys gauge\nbank_holding_keys %d\n", h.Holding())
	}
	for _, m := range []struct {
		name, help string
		v          *atomic.Int64
	}{
		{"bank_requests_total", "Requests served.", &s.Metrics.Requests},
		{"bank_replays_total", "Transfer responses replayed from the key store.", &s.Metrics.Replays},
		{"bank_conflicts_total", "409 answers: a copy arrived while the first was in progress.", &s.Metrics.Conflicts},
		{"bank_unprocessable_total", "422 answers: business refusals and reused keys.", &s.Metrics.Unprocessable},
		{"bank_takeovers_total", "Expired locks taken over by a retry.", &s.Metrics.Takeovers},
		{"bank_lost_responses_total", "Responses lost on purpose (--lose-responses, --lose-rate).", &s.Metrics.Lost},
		{"bank_fenced_total", "Completions refused by the fencing token: a holder that lost its lock.", &s.Metrics.Fenced},
		{"bank_rate_limited_total", "429 answers: a user over --rate-limit.", &s.Metrics.Limited},
		{"bank_unavailable_total", "503 answers: the database could not be reached.", &s.Metrics.Unavailable},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", m.name, m.help, m.name, m.name, m.v.Load())
	}
}
