package procs

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// The test binary plays the children of these tests, by role.
const (
	// spinRole makes it a busy, many-threaded program: the kind of server
	// whose threads go on running for a moment after kill(SIGSTOP) has
	// returned.
	spinRole = "BANK_PROCS_TEST_SPIN"
	// serveRole makes it a server of the lab's: it announces itself as
	// bank serve does when ReadyEnv is set, then waits to be stopped.
	serveRole = "BANK_PROCS_TEST_SERVE"
	// failRole makes it a server that cannot start: it says why on
	// standard error, and exits.
	failRole = "BANK_PROCS_TEST_FAIL"
	// labRole makes it a lab: it starts, as a Group, the shell script in
	// labScript, says "started", and waits to be killed.
	labRole   = "BANK_PROCS_TEST_LAB"
	labScript = "BANK_PROCS_TEST_SCRIPT"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(spinRole) != "":
		for range 4 * runtime.NumCPU() {
			go func() {
				for n := 0; ; n++ {
					if n%1000 == 0 {
						runtime.Gosched()
					}
				}
			}()
		}
		time.Sleep(time.Minute) // the test kills it long before
		os.Exit(0)
	case os.Getenv(serveRole) != "":
		if os.Getenv(ReadyEnv) != "" {
			fmt.Println("ready http://127.0.0.1:1")
		}
		fmt.Println("serving")
		time.Sleep(time.Minute) // the test stops it long before
		os.Exit(0)
	case os.Getenv(failRole) != "":
		fmt.Fprintln(os.Stderr, "cannot listen: address in use")
		os.Exit(3)
	case os.Getenv(labRole) != "":
		spec := &Spec{Path: "/bin/sh", Args: []string{"-c", os.Getenv(labScript)}, Group: true}
		if _, err := spec.Start(context.Background()); err != nil {
			fmt.Println("cannot start:", err)
			os.Exit(1)
		}
		fmt.Println("started")
		time.Sleep(time.Hour) // the test kills it long before
		os.Exit(0)
	}
	os.Exit(m.Run())
}
