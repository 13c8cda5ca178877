package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/zudojs/bank/bank/client"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
)

// bank status: what happened to a transfer, asked by its key.

// statusCommand is bank status. It is long because it holds the command's
// help text and its one run, which asks GET /transfers?key= and says what
// became of the transfer.
func (a *app) statusCommand() *cobra.Command {
	var server, token, state string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [KEY]",
		Short: "Ask the server what happened to a transfer, by its idempotency key",
		Long: `Ask GET /transfers?key=KEY what happened to a transfer: completed (with the
stored answer), still in progress, or never received (safe to send again).
Without KEY, the pending draft's key, server and token are used. An answer
that is not the bank's (a redirect, never followed; a page) is exit 4 and
keeps the draft: bank help send.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := a.statePath(state)
			if err != nil {
				return err
			}
			d, err := client.LoadDraft(path)
			if errors.Is(err, client.ErrDamagedDraft) {
				return exitcode.Envf("%v", err)
			}
			if err != nil {
				return err
			}
			key := ""
			if len(args) == 1 {
				key = args[0]
			}
			if d != nil && (key == "" || key == d.Key) {
				key = d.Key
				if !cmd.Flags().Changed("server") {
					server = d.Server
				}
				if !cmd.Flags().Changed("token") {
					token = d.Token
				}
			}
			if key == "" {
				return exitcode.Usagef("name the idempotency key: bank status KEY (no pending draft in %s)", path)
			}
			c := &client.Client{BaseURL: strings.TrimRight(server, "/"), Token: token, HTTP: &http.Client{Timeout: 10 * time.Second}}
			st, body, err := c.Lookup(cmd.Context(), key)
			if errors.Is(err, client.ErrNotTheBank) {
				// Something else answered: what became of the key is as
				// unknown as before, and the draft stays.
				return exitcode.Unknownf("%v: what became of %s is still unknown; ask the bank itself (--server URL)", err, key)
			}
			if err != nil {
				return exitcode.Envf("%v", err)
			}
			if d != nil && d.Key == key && st == "completed" {
				os.Remove(path)
			}
			if asJSON {
				// One object: the key, what the server knows of it, and
				// its own answer (the stored response, for a completed key).
				out := struct {
					Schema string `json:"schema"`
					Key    string `json:"key"`
					Status string `json:"status"`
					Server any    `json:"server,omitempty"`
				}{Schema: "bank.status/v1", Key: key, Status: st}
				if b := client.SafeJSON(body); b != nil {
					out.Server = b
				}
				return json.NewEncoder(a.io.Out).Encode(out)
			}
			switch st {
			case "completed":
				fmt.Fprintf(a.io.Out, "%s: completed: %s\n", key, client.Printable(body))
			case "in_progress":
				fmt.Fprintf(a.io.Out, "%s: still in progress; ask again shortly\n", key)
			default:
				fmt.Fprintf(a.io.Out, "%s: the server never received it (or released it after an error): safe to send again with bank send --resume\n", key)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", "http://127.0.0.1:8080", "the bank serve to ask")
	cmd.Flags().StringVar(&token, "token", "token-ada", "bearer token of the key's owner")
	cmd.Flags().StringVar(&state, "state", "", "draft file (as for bank send)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print one JSON object: the key, its status (completed, in_progress or unknown) and the server's answer (bank help json: bank.status/v1)`)
	return cmd
}
