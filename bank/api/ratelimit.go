package api

import (
	"sync"
	"time"
)

// The per-user rate limit (Server.RateLimit): a token bucket per user,
// refilled on the server's clock.

// bucket is one user's token bucket.
type bucket struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// admit takes a token from the user's bucket, refilled at RateLimit per
// second on the server's clock.
func (s *Server) admit(user int64) bool {
	if s.RateLimit <= 0 {
		return true
	}
	v, _ := s.buckets.LoadOrStore(user, &bucket{tokens: s.RateLimit, last: s.Now()})
	b := v.(*bucket)
	b.mu.Lock()
	defer b.mu.Unlock()
	now := s.Now()
	b.tokens = min(s.RateLimit, b.tokens+now.Sub(b.last).Seconds()*s.RateLimit)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
