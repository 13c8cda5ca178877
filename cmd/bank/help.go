package main

import (
	"embed"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// The manual: one plain-text file a topic, in help/, embedded in the
// binary. A topic's first line is its one-line summary (bank help lists
// it); then a blank line and the text, wrapped to 80 columns.
//
//go:embed help/*.txt
var helpFiles embed.FS

// topicOrder is the order bank help lists the topics in: the lessons and
// practice first, then the API, the measurements, and the reference.
var topicOrder = []string{
	"scenarios", "mistakes", "pictures", "exercise", "quiz", "grade",
	"serve", "send", "standards",
	"torture", "bench", "speed",
	"postgres", "environment", "exit-codes", "testing",
}

type topic struct{ name, summary, text string }

// topics reads the manual's topics, in topicOrder.
func topics() []topic {
	out := make([]topic, len(topicOrder))
	for i, name := range topicOrder {
		raw, err := helpFiles.ReadFile("help/" + name + ".txt")
		if err != nil {
			panic("the help topic " + name + " is not embedded: " + err.Error())
		}
		text := string(raw)
		summary, _, _ := strings.Cut(text, "\n")
		out[i] = topic{name: name, summary: summary, text: text}
	}
	return out
}

func lookupTopic(name string) (topic, bool) {
	for _, t := range topics() {
		if t.name == name {
			return t, true
		}
	}
	return topic{}, false
}

func topicNames() []string { return slices.Clone(topicOrder) }

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
			for _, t := range topics() {
				names = append(names, t.name+"\t"+t.summary)
			}
			for _, c := range root.Commands() {
				if c.IsAvailableCommand() && !slices.Contains(topicOrder, c.Name()) {
					names = append(names, c.Name()+"\t"+c.Short)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if t, ok := lookupTopic(args[0]); ok {
					_, err := io.WriteString(cmd.OutOrStdout(), t.text)
					return err
				}
			}
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 || (target == root && len(args) > 0) {
				all := append(commandNames(root), topicNames()...)
				return usagef("no help for %q%s: it is neither a command nor a topic; bank help lists both", strings.Join(args, " "), didYouMean(args[len(args)-1], all))
			}
			return target.Help()
		},
	}
}

// withTopics makes the root's help end with the manual's topics, after
// the commands; every other command's help is cobra's own.
func withTopics(root *cobra.Command) {
	help := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		help(cmd, args)
		if cmd == root {
			printTopics(cmd.OutOrStdout())
		}
	})
}

func printTopics(w io.Writer) {
	width := 0
	for _, t := range topicOrder {
		width = max(width, len(t))
	}
	fmt.Fprintln(w, "\nHelp topics, the lab's manual (bank help TOPIC):")
	for _, t := range topics() {
		fmt.Fprintf(w, "  %-*s  %s\n", width, t.name, t.summary)
	}
}
