package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/zudojs/bank/cmd/bank/help"
	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios/practice"
)

// namedCommand is a bank command line written in a message or the manual:
// "bank" and its words, then its flags.
var namedCommand = regexp.MustCompile(`\bbank((?: [a-z][a-z0-9-]*)+)((?: --[a-z][a-z0-9-]*)*)`)

// proseAfter are words that follow "bank NAME" in a sentence, not a name
// ("bank help lists both", "run bank exercise always with...").
var proseAfter = []string{"always", "or", "has", "lists", "puts", "must", "alone", "and", "with", "runs", "shows", "prints", "says", "takes", "is", "your", "adds", "bank"}

// TestNamedCommandsExist: every command line the lab writes for the
// learner to type (in its Go strings: hints, "see it done right", errors;
// in the manual and the README) names a command that exists, a
// scenario, mistake, exercise or topic that exists, and flags the command
// has. A rename that leaves a hint behind fails here.
func TestNamedCommandsExist(t *testing.T) {
	t.Parallel()
	root := (&app{}).rootCommand()
	checked := 0
	check := func(where, text string) {
		for _, m := range namedCommand.FindAllStringSubmatch(text, -1) {
			words, flags := strings.Fields(m[1]), strings.Fields(m[2])
			if i := slices.IndexFunc(words, func(w string) bool { return slices.Contains(proseAfter, w) }); i >= 0 {
				words, flags = words[:i], nil // the sentence goes on: what follows is not the command's
			}
			if len(words) > 0 && words[0] == "help" { // bank help is added to the root when it runs
				checked++
				if len(words) > 1 {
					if ok, kind := nameExists("help", words[1]); !ok {
						t.Errorf("%s: %q names the %s %q, which does not exist", where, strings.TrimSpace(m[0]), kind, words[1])
					}
				}
				continue
			}
			cmd, rest, err := root.Find(words)
			if err != nil || cmd == root {
				continue // "the bank refused": prose, not a command
			}
			checked++
			if len(rest) > 0 {
				if ok, kind := nameExists(cmd.Name(), rest[0]); !ok {
					t.Errorf("%s: %q names the %s %q, which does not exist", where, strings.TrimSpace(m[0]), kind, rest[0])
				}
			}
			for _, flag := range flags {
				if !hasFlag(cmd, strings.TrimPrefix(flag, "--")) {
					t.Errorf("%s: %q: %s has no flag %s", where, strings.TrimSpace(m[0]), cmd.CommandPath(), flag)
				}
			}
		}
	}
	repo, _ := filepath.Abs(filepath.Join("..", ".."))
	err := pgtest.WalkModule(repo, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repo, path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || d.Name() == "node_modules" || d.Name() == "bin" || d.Name() == "dist") {
			return filepath.SkipDir
		}
		switch {
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						check(rel, s)
					}
				}
				return true
			})
		case strings.HasSuffix(path, ".txt") && strings.Contains(rel, "help"), rel == "README.md":
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			check(rel, strings.Join(strings.Fields(string(b)), " ")) // a command may be cut at a line's end
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d command lines found: the search is broken", checked)
	}
}

// nameExists reports whether name is one of the things command takes by
// name (a scenario, mistake, exercise, topic), and what kind it is.
func nameExists(command, name string) (bool, string) {
	switch command {
	case "scenario":
		_, ok := scenarios.Lookup(name)
		return ok || name == "all" || name == "list", "scenario"
	case "mistake":
		_, ok := scenarios.LookupMistake(name)
		return ok || name == "all" || name == "list", "mistake"
	case "exercise":
		_, ok := practice.LookupExercise(name)
		return ok || name == "list", "exercise"
	case "help":
		_, ok := help.Lookup(name)
		return ok || slices.Contains(commandNames((&app{}).rootCommand()), name), "topic or command"
	}
	return true, "" // another command's arguments are its own (bank status KEY)
}

func hasFlag(cmd *cobra.Command, name string) bool {
	return cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil || name == "help"
}
