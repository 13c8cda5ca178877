package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/zudojs/bank/cmd/bank/help"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/names"
)

// helpCommand is cobra's help, with the manual's topics: bank help TOPIC
// prints one (a topic may share its name with a command: bank help grade
// is the manual, bank grade --help the flags). An unknown NAME is a usage
// error (exit 2, with a suggestion across commands and topics), as an
// unknown command is; cobra's own prints the root's help and exits 0.
func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command | topic]",
		Short: "Help about any command, or a topic of the manual",
		Long: `bank help lists the commands and the topics of the manual, each with
its summary. bank help COMMAND prints a command's help (as bank COMMAND
--help does); bank help TOPIC prints a topic. Where a topic and a command
share a name, bank help NAME is the topic (bank help grade: what each
check proves) and bank NAME --help the command's flags.`,
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, t := range help.Topics() {
				names = append(names, t.Name+"\t"+t.Summary)
			}
			for _, c := range root.Commands() {
				if c.IsAvailableCommand() && !slices.Contains(help.Names(), c.Name()) {
					names = append(names, c.Name()+"\t"+c.Short)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if t, ok := help.Lookup(args[0]); ok {
					_, err := io.WriteString(cmd.OutOrStdout(), t.Text)
					return err
				}
			}
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 || (target == root && len(args) > 0) {
				all := append(commandNames(root), help.Names()...)
				return exitcode.Usagef("no help for %q%s: it is neither a command nor a topic; bank help lists both", strings.Join(args, " "), names.DidYouMean(args[len(args)-1], all))
			}
			return target.Help()
		},
	}
}

// withTopics makes the root's help end with the manual's topics, after
// the commands; every other command's help is cobra's own.
func withTopics(root *cobra.Command) {
	cobraHelp := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		cobraHelp(cmd, args)
		if cmd == root {
			printTopics(cmd.OutOrStdout())
		}
	})
}

func printTopics(w io.Writer) {
	width := 0
	for _, t := range help.Names() {
		width = max(width, len(t))
	}
	fmt.Fprintln(w, "\nHelp topics, the lab's manual (bank help TOPIC):")
	for _, t := range help.Topics() {
		fmt.Fprintf(w, "  %-*s  %s\n", width, t.Name, t.Summary)
	}
}
