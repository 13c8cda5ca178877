package grade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

// StartError is a server that exited before it listened, or never
// listened: an environment failure, not a verdict on its idempotency.
type StartError struct {
	Why    string // what went wrong
	Stderr string // the last lines the server wrote
	Busy   bool   // the machine was too busy to tell: the server never listened, but was still at work
}

func (e *StartError) Error() string { return e.Why }

// instance is one process of the learner's server, with everything it
// starts, listening on a port of the grader's choosing.
type instance struct {
	cfg    *Config
	dbURL  string
	port   int
	g      *procs.Child
	output *procs.Tail
}

// startInstance starts the command with DATABASE_URL, PORT and
// LOCK_TTL_MS in its environment and waits, bounded, until it listens.
func startInstance(ctx context.Context, cfg *Config, dbURL string) (*instance, error) {
	in := &instance{cfg: cfg, dbURL: dbURL}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if in.port, err = procs.FreePort(); err != nil {
			return nil, err
		}
		if err = in.start(ctx); !errors.Is(err, errPortTaken) {
			return in, err
		}
	}
	return in, err
}

// errPortTaken: another program took the port chosen for the server.
var errPortTaken = errors.New("another program took the port")

func (in *instance) start(ctx context.Context) error {
	spec := procs.Spec{Path: in.cfg.Command[0], Args: in.cfg.Command[1:], Env: []string{
		"DATABASE_URL=" + in.dbURL,
		"PORT=" + strconv.Itoa(in.port),
		"LOCK_TTL_MS=" + strconv.FormatInt(in.cfg.LockTTL.Milliseconds(), 10)},
		Group: true, StopGrace: 5 * time.Second}
	g, err := spec.Start(context.WithoutCancel(ctx)) // the grader kills it itself, when it should
	in.output = spec.Output
	if err != nil {
		return &StartError{Why: fmt.Sprintf("cannot start %s: %v; check the command after --", in.cfg.Command[0], err)}
	}
	in.g = g
	deadline := pace.After(in.cfg.StartTimeout)
	cpu0, _ := pace.GroupCPU(g.PID())
	addr := "127.0.0.1:" + strconv.Itoa(in.port)
	stranger := false // someone else listens on the port
	for {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			// A connection to a port in the ephemeral range that nobody
			// listens on can connect to itself (the kernel may pick the
			// very same port as its source): that is not a server.
			self := c.LocalAddr().(*net.TCPAddr).Port == in.port
			c.Close()
			if !self {
				owned, known := listenedBy(g.PID(), in.port)
				if owned || !known {
					return nil
				}
				stranger = true // ours will fail to bind, and exit
			}
		}
		select {
		case <-g.Exited():
			if stranger {
				return errPortTaken
			}
			return &StartError{Why: fmt.Sprintf("the server exited (%v) before it listened on its PORT; run it by hand to see why, with DATABASE_URL and PORT set", exitStatus(g.Err())), Stderr: in.output.LastLines(10)}
		case <-ctx.Done():
			g.Kill()
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if deadline.Passed() {
			// Busy, and the server at work (it used the processor), it may
			// just be slow; idle, it is stuck, however busy the machine.
			cpu, known := pace.GroupCPU(g.PID())
			g.Kill()
			if deadline.Busy() && (!known || cpu-cpu0 >= 100*time.Millisecond) {
				return &StartError{Busy: true, Stderr: in.output.LastLines(10), Why: fmt.Sprintf("the server did not listen on 127.0.0.1:$PORT within %s%s, and the machine was too busy to tell whether it ever would: grade again when the machine is quieter, or give it longer with --start-timeout", in.cfg.StartTimeout, deadline.Stretched())}
			}
			return &StartError{Why: fmt.Sprintf("the server did not listen on 127.0.0.1:$PORT within %s: it must take its port from the PORT variable (or give it longer with --start-timeout)", in.cfg.StartTimeout), Stderr: in.output.LastLines(10)}
		}
	}
}

func exitStatus(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// kill ends the server at once (SIGKILL to its whole process group).
func (in *instance) kill() { in.g.Kill() }

// stop ends the server the orderly way (SIGTERM), as a deploy would.
func (in *instance) stop() { in.g.Stop() }

// restart starts it again on the same port. Should another program take
// the port in the meantime, the check cannot go on: it is run again.
func (in *instance) restart(ctx context.Context) error {
	err := in.start(ctx)
	if errors.Is(err, errPortTaken) {
		return &unsureError{"another program took the server's port while it restarted"}
	}
	return err
}

func (in *instance) base() string { return "http://127.0.0.1:" + strconv.Itoa(in.port) }

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
