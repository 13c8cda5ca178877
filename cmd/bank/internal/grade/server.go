package grade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
	"github.com/zudojs/bank/cmd/bank/internal/served"
)

// StartError is a server that exited before it listened, or never
// listened: an environment failure, not a verdict on its idempotency.
type StartError = served.StartError

// instance is one process of the learner's server (package served), on
// the check's database.
type instance struct {
	*served.Process
	cfg   *Config
	dbURL string
}

// startInstance starts the command with DATABASE_URL, PORT and
// LOCK_TTL_MS in its environment and waits, bounded, until it listens.
func startInstance(ctx context.Context, cfg *Config, dbURL string) (*instance, error) {
	p, err := served.Start(ctx, served.Spec{Command: cfg.Command, StartTimeout: cfg.StartTimeout,
		What: "server", Vars: "DATABASE_URL and PORT",
		Env: []string{"DATABASE_URL=" + dbURL, "LOCK_TTL_MS=" + strconv.FormatInt(cfg.LockTTL.Milliseconds(), 10)}})
	return &instance{Process: p, cfg: cfg, dbURL: dbURL}, err
}

func exitStatus(err error) string { return served.ExitStatus(err) }

// kill ends the server at once (SIGKILL to its whole process group).
func (in *instance) kill() { in.Kill() }

// stop ends the server the orderly way (SIGTERM), as a deploy would.
func (in *instance) stop() { in.Stop() }

// restart starts it again on the same port. Should another program take
// the port in the meantime, the check cannot go on: it is run again.
func (in *instance) restart(ctx context.Context) error {
	err := in.Restart(ctx)
	if errors.Is(err, served.ErrPortTaken) {
		return &unsureError{"another program took the server's port while it restarted"}
	}
	return err
}

func (in *instance) base() string { return in.Base() }

// proxy stands between the grader's client and one server instance, and
// loses replies on demand: it reads the server's whole reply, then closes
// the client's connection without a word, as a network that fails after
// the server committed would.
type proxy struct {
	upstream func() string    // the server's base URL
	server   string           // the server's name, in the diagram
	rec      *record.Recorder // the trial's, where each request and answer is drawn
	http     *http.Client
	ln       net.Listener
	srv      *http.Server

	inFlight atomic.Int64 // requests forwarded and not yet answered
	loseNext atomic.Int64 // lose this many replies, then none
	lost     atomic.Int64 // replies lost so far

	lostMu   sync.Mutex
	kept     []reply     // the first replies it lost, as the server sent them (a few)
	loseRate func() bool // for torture: lose this reply?
}

func startProxy(upstream func() string, server string, rec *record.Recorder) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the grader's proxy: %w", err)
	}
	p := &proxy{upstream: upstream, server: server, rec: rec, ln: ln, http: &http.Client{Timeout: 60 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true, MaxResponseHeaderBytes: maxBody}}}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

func (p *proxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *proxy) close() {
	p.srv.Close()
	p.http.CloseIdleConnections()
}

// maxBody is as much of an answer as the grader reads (the contract's
// answers are a few hundred bytes): a server that sends more, or for
// ever, is cut off there, and the grader's memory stays bounded.
const maxBody = 64 << 10

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream()+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		hangUp(w)
		return
	}
	req.Header = r.Header.Clone()
	// Not rewindable: net/http's Transport would otherwise resend a
	// request with an Idempotency-Key, on its own, when a reused
	// connection to a killed server fails (client.Client does the same).
	req.GetBody = nil
	x := p.rec.Request(p.server, r, body)
	p.inFlight.Add(1)
	resp, err := p.http.Do(req)
	p.inFlight.Add(-1)
	var answer []byte
	if err == nil {
		answer, err = io.ReadAll(io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
	}
	if err != nil {
		if r.Context().Err() != nil {
			p.rec.Arrow(record.ActorApp, record.ActorProxy, record.HungUp, "")
		} else {
			p.rec.Arrow(record.ActorProxy, record.ActorApp, p.rec.NoAnswer(p.server, x), "error")
		}
		hangUp(w) // the server died or hung up: so does the network
		return
	}
	label, mark := p.rec.Answer(p.server, x, resp.StatusCode, strings.EqualFold(resp.Header.Get("Idempotent-Replayed"), "true"), answer)
	p.rec.Arrow(p.server, record.ActorProxy, label, mark)
	if p.lose() {
		p.lost.Add(1)
		p.keep(reply{Status: resp.StatusCode, Body: string(bytes.TrimSpace(answer)),
			Replayed: strings.EqualFold(resp.Header.Get("Idempotent-Replayed"), "true"), RetryAfter: resp.Header.Get("Retry-After")})
		p.rec.Arrow(record.ActorProxy, record.ActorApp, label+", never reaches the app", "lost")
		hangUp(w)
		return
	}
	p.rec.Arrow(record.ActorProxy, record.ActorApp, label, mark)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

// keep remembers a lost reply (the first few).
func (p *proxy) keep(r reply) {
	p.lostMu.Lock()
	defer p.lostMu.Unlock()
	if len(p.kept) < 8 {
		p.kept = append(p.kept, r)
	}
}

// lostReplies are the first replies the proxy lost, as the server sent
// them.
func (p *proxy) lostReplies() []reply {
	p.lostMu.Lock()
	defer p.lostMu.Unlock()
	return slices.Clone(p.kept)
}

func (p *proxy) lose() bool {
	for {
		n := p.loseNext.Load()
		if n <= 0 {
			break
		}
		if p.loseNext.CompareAndSwap(n, n-1) {
			return true
		}
	}
	return p.loseRate != nil && p.loseRate()
}

// hangUp closes the client's connection instead of answering.
func hangUp(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
		return
	}
	panic(http.ErrAbortHandler)
}
