package torture

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/witness"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

// Serve is a Replica that is a real `bank serve` process: a run kills it,
// restarts it on the same port, pauses and resumes it, and it keeps its
// metrics across its lives.
type Serve struct {
	name          string
	binary, dbURL string
	args          []string

	mu      sync.Mutex
	p       *procs.Child     // its current life
	port    string           // the port all its lives listen on
	counted map[string]int64 // the metrics of its earlier lives
}

// StartServe starts replica i of a run: bank serve (binary) on the
// database at dbURL, with args and a seed of its own drawn from seed, its
// sessions named bank-replica-i (pg_stat_activity shows which replica a
// session belongs to). Stop it when the run is over.
func StartServe(binary, dbURL string, i int, seed uint64, args []string) (*Serve, error) {
	name := fmt.Sprintf("bank-replica-%d", i)
	r := &Serve{name: name, binary: binary, dbURL: witness.Tagged(dbURL, name), args: replicaArgs(args, seed, i)}
	if err := r.Restart(); err != nil {
		return nil, err
	}
	return r, nil
}

// replicaArgs are replica i's arguments: a copy of args with its own seed.
// (Appending to args itself would share one backing array, and every
// replica would get the last one's seed.)
func replicaArgs(args []string, seed uint64, i int) []string {
	return slices.Concat(args, []string{"--seed", strconv.Itoa(int(seed)*10 + i)})
}

func (r *Serve) Name() string { return r.name }

func (r *Serve) URL() string { return r.life().Addr }

func (r *Serve) life() *procs.Child {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p
}

// Restart starts it, on the port of its first life if it had one.
func (r *Serve) Restart() error {
	args := r.args
	if r.port != "" {
		args = append(slices.Clip(args), "--addr", "127.0.0.1:"+r.port)
	}
	var p *procs.Child
	var err error
	for i := 0; i < 20; i++ { // the old process's port may take a moment to free
		if p, err = lab.StartServe(context.Background(), r.binary, r.dbURL, args...); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.p = p
	r.port = p.Addr[strings.LastIndex(p.Addr, ":")+1:]
	r.mu.Unlock()
	return nil
}

// Kill ends this life at once (kill -9), its metrics kept.
func (r *Serve) Kill() error {
	p := r.life()
	m := scrape(p.Addr)
	r.mu.Lock()
	if r.counted == nil {
		r.counted = map[string]int64{}
	}
	for k, v := range m {
		r.counted[k] += v
	}
	r.mu.Unlock()
	p.Kill()
	return nil
}

func (r *Serve) Pause() error { return r.life().Pause() }

func (r *Serve) Resume() error { return r.life().Resume() }

// Metrics are its metrics over all its lives.
func (r *Serve) Metrics() map[string]int64 {
	m := scrape(r.URL())
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, v := range r.counted {
		m[k] += v
	}
	return m
}

// Stop ends it the orderly way.
func (r *Serve) Stop() {
	if p := r.life(); p != nil {
		p.Stop()
	}
}

// scrape reads a bank serve's metrics (Prometheus' text format).
func scrape(url string) map[string]int64 {
	m := map[string]int64{}
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return m
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) == 2 && !strings.HasPrefix(line, "#") {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			m[f[0]] = v
		}
	}
	return m
}
