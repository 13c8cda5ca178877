package main

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/httpserve"
	"github.com/zudojs/bank/cmd/bank/internal/labweb"
	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/render"
)

func (a *app) labCommand() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "A local web page for class: run a story and step through its diagram",
		Long: `Serve a web page on this machine only: pick a scenario or a mistake, run it on
the lab's real PostgreSQL, and step forward and back through its sequence
diagram, beside the balances and the idempotency keys after each step.
Everything is in the bank binary; nothing is fetched. Ctrl-C stops it.`,
		Example: `  bank lab                          # then open http://127.0.0.1:8090
  bank lab --addr 127.0.0.1:9000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.lab(cmd.Context(), addr) },
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8090", "loopback address to listen on")
	return cmd
}

func (a *app) lab(ctx context.Context, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return exitcode.Usagef("--addr %q is not host:port, such as 127.0.0.1:8090", addr)
	}
	if !loopback(addr) {
		return exitcode.Usagef("--addr must be a loopback address (127.0.0.1 or localhost): bank lab is for this machine only")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return exitcode.Envf("cannot listen on %s: %s; choose another with --addr", addr, reason(err))
	}
	defer ln.Close()
	db, err := a.openDatabase(ctx)
	if err != nil {
		return err
	}
	defer db.close()

	var entries []labweb.Entry
	for _, s := range scenarios.All {
		entries = append(entries, labweb.Entry{Kind: "scenario", Name: s.Name, Summary: s.Summary})
	}
	for _, m := range scenarios.Mistakes {
		entries = append(entries, labweb.Entry{Kind: "mistake", Name: m.Name, Summary: m.Summary})
	}
	run := func(ctx context.Context, kind, name string) ([]*render.Recording, error) {
		rec := &render.Recorder{}
		o := lab.Options{Bank: self, Sink: rec, States: true}
		var err error
		if kind == "mistake" {
			m, _ := scenarios.LookupMistake(name)
			_, err = lab.RunMistake(ctx, db.clones, m, o)
		} else {
			sc, _ := scenarios.Lookup(name)
			_, err = lab.Run(ctx, db.clones, sc, o)
		}
		return rec.Runs, err
	}
	hs := httpserve.New(labweb.Handler(entries, run))
	// A run is cut when its browser goes (its request's context) and when
	// bank lab stops (Ctrl-C): the requests' contexts come from ctx, so
	// the shutdown does not wait for a run in flight to finish.
	hs.BaseContext = func(net.Listener) context.Context { return ctx }
	return a.serveUntilDone(ctx, hs, ln, func(base string) {
		fmt.Fprintf(a.io.Out, "bank lab: open %s in a browser (this machine only; Ctrl-C to stop)\n", base)
	})
}
