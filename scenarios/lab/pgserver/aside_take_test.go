package pgserver

import (
	"context"
	"testing"
	"time"
)

// TestTakeStopsWaitingOnInterrupt: a scenario cut short (Ctrl-C) while
// the next spare is still being cloned does not wait for the clone; the
// clone, when it comes, is kept as the spare for the run after. (take
// once waited on the clone whatever its caller's context said.)
func TestTakeStopsWaitingOnInterrupt(t *testing.T) {
	t.Parallel()
	a := &aside{wake: make(chan struct{}, 1), stopped: make(chan struct{}), cloned: make(chan string, 1), cloning: true}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	took := make(chan string, 1)
	go func() { took <- a.take(ctx) }()
	select {
	case got := <-took:
		if got != "" {
			t.Fatalf("took %q with no clone made", got)
		}
	case <-time.After(10 * time.Second): // a hang, not a speed goal
		t.Fatal("take still waits for the clone after its context ended")
	}
	a.cloned <- "bank_spare_x_1"
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		a.mu.Lock()
		ready := a.ready
		a.mu.Unlock()
		if ready == "bank_spare_x_1" {
			return
		}
	}
	t.Fatal("the clone nobody waited for was not kept as the next spare")
}
