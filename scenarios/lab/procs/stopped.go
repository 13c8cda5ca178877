//go:build unix

package procs

import (
	"fmt"
	"time"
)

// stopBound is how long a pause may take to reach every thread.
const stopBound = 5 * time.Second

// waitStopped returns once stopped says so, or fails after stopBound.
//
// kill(SIGSTOP) returns before the process has stopped: the kernel wakes
// one thread to begin the stop, and the others go on running until they
// are told in turn. On a busy machine a many-threaded server (any Go or
// Node server) can answer a query or commit a transaction in that gap,
// so a fault that must land while the server is frozen waits for this.
func waitStopped(what string, stopped func() bool) error {
	deadline := time.Now().Add(stopBound)
	for !stopped() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not stop within %s of SIGSTOP", what, stopBound)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}
