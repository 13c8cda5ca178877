package bench

import (
	"context"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// runHTTP starts a fresh bank serve (so its peak RSS is this mode's), and
// runs cfg.Clients workers against it for d.
func runHTTP(ctx context.Context, cfg Config, d time.Duration, m Mode, q *requests) (sample, error) {
	url, pid, stop, err := cfg.Serve(ctx, m.serveArgs()...)
	if err != nil {
		return sample{}, err
	}
	defer stop()
	transport := &http.Transport{MaxIdleConnsPerHost: cfg.Clients * 2, MaxConnsPerHost: cfg.Clients * 2}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	lat := make([][]time.Duration, cfg.Clients)
	var failMu sync.Mutex
	failures := map[string]int{}
	fail := func(why string) {
		failMu.Lock()
		failures[why]++
		failMu.Unlock()
	}
	for w := 0; w < cfg.Clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := mrand.New(mrand.NewPCG(cfg.Seed, uint64(w)))
			for time.Now().Before(deadline) && ctx.Err() == nil {
				key, body, copies := q.next(m, r)
				if copies == 1 {
					d, why := post(ctx, hc, url, key, body)
					lat[w] = append(lat[w], d)
					if why != "" {
						fail(why)
					}
					continue
				}
				var inner sync.WaitGroup
				var mu sync.Mutex
				for range copies {
					inner.Add(1)
					go func() {
						defer inner.Done()
						d, why := post(ctx, hc, url, key, body)
						mu.Lock()
						lat[w] = append(lat[w], d)
						mu.Unlock()
						if why != "" {
							fail(why)
						}
					}()
				}
				inner.Wait()
			}
		}()
	}
	wg.Wait()
	s := sample{seconds: d.Seconds(), failures: failures, rssMiB: peakRSS(pid)}
	for _, l := range lat {
		s.lat = append(s.lat, l...)
	}
	return s, nil
}

// post sends one transfer and says why it failed, or "" when it did not.
func post(ctx context.Context, hc *http.Client, url, key, body string) (time.Duration, string) {
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/transfers", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer token-ada")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return time.Since(start), "no reply"
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	// 409 is a correct answer in a duplicate storm; 5xx and others are not.
	if resp.StatusCode == 201 || resp.StatusCode == 409 {
		return d, ""
	}
	return d, "HTTP " + strconv.Itoa(resp.StatusCode)
}
