// Command bank is the idempotency lab: it reproduces, on a real
// PostgreSQL, every way a money transfer goes wrong under retries, crashes
// and duplicates, and shows the fix working.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first Ctrl-C asks run to stop and clean up; from then on the
		// signals do what they do by default, so a second one ends bank at
		// once (its watchdog still ends every process bank started).
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Getenv)
	stop()
	os.Exit(code)
}
