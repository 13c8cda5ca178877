package card

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Workflows are the CI files bank grade --workflow writes for a learner's
// repository: "actions", one GitHub Actions job that grades the server and
// publishes the JUnit file; "classroom", GitHub Classroom's autograding,
// one test per check with its points (a check passes, or earns nothing).
var Workflows = []string{"actions", "classroom"}

// Workflow is the workflow of kind for grading g's command (a shell line
// is made of it) in the repository's root, each check worth points[name]
// (1 unless named).
//
// The file is built as data and written by yaml.v3, so that no name,
// however awkward (spaces, a colon, a #, quotes, non-ASCII), can break
// the YAML; the command inside it is quoted for a POSIX shell by
// shellQuote. Every line fits 80 columns, as yamllint asks: a long
// command is a literal block, folded between words with a backslash.
func Workflow(kind string, g Graded, points map[string]int) (string, error) {
	command, tool := g.Command, strings.Join(g.tool(), " ")
	var head string
	var doc *yaml.Node
	switch kind {
	case "actions":
		head = ".github/workflows/grade.yml: " + tool + " on every push, the report\ncard in the job's log and each check as a test in the run's summary."
		steps := firstSteps(g)
		steps = append(steps,
			mapping("name", tool, "run", commandBlock(append(g.tool(), append([]string{"--junit", "grade.xml", "--"}, command...)...), stepIndent)),
			mapping("name", "publish the checks", "if", "success() || failure()", "uses", "mikepenz/action-junit-report@v5",
				"with", mapping("report_paths", "grade.xml", "include_passed", true)))
		doc = mapping(
			"name", "grade",
			"on", flow("push", "pull_request", "workflow_dispatch"),
			"permissions", mapping("contents", "read", "checks", "write"),
			"jobs", mapping("grade", mapping(
				"runs-on", "ubuntu-latest",
				"timeout-minutes", 15,
				"steps", sequence(steps...))))
	case "classroom":
		head = ".github/workflows/classroom.yml: GitHub Classroom's autograding, one test\nper check of " + tool + ", each worth its points when it passes."
		steps := firstSteps(g)
		var ids []string
		env := mapping()
		for _, c := range g.Checks {
			worth, ok := points[c.Name]
			if !ok {
				worth = 1
			}
			ids = append(ids, c.Name)
			args := append(g.tool(), append([]string{"--strict", "--only", c.Name, "--"}, command...)...)
			step := mapping("name", c.Name, "id", c.Name, "uses", "classroom-resources/autograding-command-grader@v1",
				"with", mapping("test-name", c.Name, "command", commandBlock(args, withIndent), "timeout", 5, "max-score", worth))
			step.HeadComment = fold(c.Name+": "+c.Title, 80-stepIndent-len("# "))
			steps = append(steps, step)
			env.Content = append(env.Content, scalar(strings.ToUpper(c.Name)+"_RESULTS"), scalar("${{steps."+c.Name+".outputs.result}}"))
		}
		// The reporter splits its runners at commas and trims each, so
		// that one a line keeps every line short.
		runners := scalar(strings.Join(ids, ",\n"))
		runners.Style = yaml.LiteralStyle
		steps = append(steps, mapping("name", "Autograding Reporter", "uses", "classroom-resources/autograding-grading-reporter@v1",
			"env", env, "with", mapping("runners", runners)))
		doc = mapping(
			"name", "Autograding Tests",
			"on", flow("push", "repository_dispatch"),
			"permissions", mapping("checks", "write", "actions", "read", "contents", "read"),
			"jobs", mapping("run-autograding-tests", mapping(
				"runs-on", "ubuntu-latest",
				"if", "github.actor != 'github-classroom[bot]'",
				"steps", sequence(steps...))))
	default:
		return "", fmt.Errorf("no workflow %q: choose %s", kind, strings.Join(Workflows, " or "))
	}
	var b bytes.Buffer
	for _, l := range strings.Split(head, "\n") {
		b.WriteString("# " + l + "\n")
	}
	b.WriteString("---\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return "", fmt.Errorf("writing the %s workflow: %w", kind, err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("writing the %s workflow: %w", kind, err)
	}
	return b.String(), nil
}

// The columns a command's block starts at: a step's keys (under jobs,
// the job, steps and the dash) and the keys of a step's with.
const (
	stepIndent = 8
	withIndent = 10
)

// firstSteps check the repository out and install Node.js, the server's
// or client's dependencies and bank.
func firstSteps(g Graded) []*yaml.Node {
	steps := []*yaml.Node{
		mapping("uses", "actions/checkout@v4"),
		mapping("uses", "actions/setup-node@v4", "with", mapping("node-version", 22)),
	}
	steps = append(steps, setupSteps(g)...)
	return append(steps, mapping("name", "install bank (brings its own PostgreSQL)", "run", "npm install -g @zudojs/bank"))
}

// setupSteps are the steps that install the server's or client's own
// dependencies, as far as its command tells: npm's for Node.js, Python
// (and psycopg for a server), a build for a program in the repository
// (the Go starter's ./server or ./client).
func setupSteps(g Graded) []*yaml.Node {
	command, of := g.Command, g.of()
	prog := filepath.Base(command[0])
	switch {
	case prog == "node" || prog == "npm" || prog == "npx":
		return []*yaml.Node{mapping("name", "the "+of+"'s dependencies", "run", "npm install")}
	case strings.HasPrefix(prog, "python") && g.Of == "client": // the starter needs the standard library only
		return []*yaml.Node{mapping("uses", "actions/setup-python@v5", "with", mapping("python-version", "3.12"))}
	case strings.HasPrefix(prog, "python"):
		return []*yaml.Node{
			mapping("uses", "actions/setup-python@v5", "with", mapping("python-version", "3.12")),
			mapping("name", "the server's dependencies", "run", `pip install "psycopg[binary]"`),
		}
	case strings.HasPrefix(command[0], "./"):
		return []*yaml.Node{
			mapping("uses", "actions/setup-go@v5", "with", mapping("go-version", "stable")),
			mapping("name", "build the "+of+" (for a Go "+of+"; change it for another language)",
				"run", commandBlock([]string{"go", "build", "-o", command[0][2:], "."}, stepIndent)),
		}
	}
	return nil
}

// commandBlock is args as one shell command, the value of a run or a
// command key at column indent: on one line where it fits, else a literal
// block folded between words with a backslash and a newline, which the
// shell joins again (a word too long for a line is cut into quoted pieces,
// each line ending with a backslash and the next starting at once, so
// that the shell joins them into the one word).
func commandBlock(args []string, indent int) *yaml.Node {
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = shellQuote(a)
	}
	line := strings.Join(words, " ")
	// key: value on one line, as yaml.v3 writes it when it needs no quotes.
	if indent+len("command: ")+columns(line) <= 80 && plainSafe(line) {
		return scalar(line)
	}
	width := 80 - indent - 2 // a block's lines start two columns in
	var lines []string
	cur := words[0]
	for i, w := range words[1:] {
		if columns(cur)+1+columns(w)+len(" \\") <= width {
			cur += " " + w
			continue
		}
		lines = append(lines, cur+" \\")
		if len("  ")+columns(w)+len(" \\") <= width {
			cur = "  " + w
			continue
		}
		pieces := quotedPieces(args[i+1], width-len("  ")-len("\\"))
		cur = "  " + pieces[0]
		for _, p := range pieces[1:] {
			lines = append(lines, cur+"\\")
			cur = p
		}
	}
	n := scalar(strings.Join(append(lines, cur), "\n"))
	n.Style = yaml.LiteralStyle
	return n
}

// quotedPieces cuts a into pieces, each quoted for the shell and at most
// width columns once quoted (where a single character allows it).
func quotedPieces(a string, width int) []string {
	var pieces []string
	cur := ""
	for _, r := range a {
		if cur != "" && columns(quote(cur+string(r))) > width {
			pieces = append(pieces, quote(cur))
			cur = ""
		}
		cur += string(r)
	}
	return append(pieces, quote(cur))
}

func columns(s string) int { return utf8.RuneCountInString(s) }

// plainSafe reports whether s can stand as a plain YAML scalar, so that
// it reads as the same string without quotes: in doubt, false.
func plainSafe(s string) bool {
	var v any
	if strings.ContainsAny(s, "#:'\"{}[],&*!|>%@`\\") || s != strings.TrimSpace(s) || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "?") {
		return false
	}
	return yaml.Unmarshal([]byte("v: "+s), &struct{ V *any }{&v}) == nil && v == s
}

// shellQuote quotes a word for a POSIX shell (sh, bash, dash), only where
// it needs it: a word of the characters below stays bare, anything else
// goes in single quotes, where the shell reads every character as itself
// but the single quote, which is closed, escaped and opened again.
func shellQuote(a string) string {
	const bare = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./,+@%"
	if a != "" && strings.Trim(a, bare) == "" {
		return a
	}
	return quote(a)
}

// quote puts a in single quotes for a POSIX shell.
func quote(a string) string { return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'" }

// shellLine quotes args for a POSIX shell and joins them.
func shellLine(args []string) string {
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = shellQuote(a)
	}
	return strings.Join(words, " ")
}

// fold breaks text into lines of at most width columns, between words.
func fold(text string, width int) string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(text) {
		if cur != "" && columns(cur)+1+columns(w) > width {
			lines = append(lines, cur)
			cur = w
			continue
		}
		cur = strings.TrimPrefix(cur+" "+w, " ")
	}
	return strings.Join(append(lines, cur), "\n")
}

// mapping is a YAML mapping of the keys and values given in turn; a value
// is a *yaml.Node, a string, an int or a bool.
func mapping(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i < len(kv); i += 2 {
		m.Content = append(m.Content, scalar(kv[i].(string)), value(kv[i+1]))
	}
	return m
}

func value(v any) *yaml.Node {
	switch v := v.(type) {
	case *yaml.Node:
		return v
	case string:
		return scalar(v)
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(v)}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(v)}
	}
	panic(fmt.Sprintf("a workflow's value of type %T", v))
}

// scalar is a string, which yaml.v3 quotes where YAML would read it as
// something else (a number, a boolean); quoted here too are the words
// YAML 1.1 reads as booleans, such as the key "on", which GitHub reads as
// a string but yamllint, and older readers, as true.
func scalar(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "on", "off", "true", "false":
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

func sequence(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Content: items}
}

// flow is a short list of strings on one line: [push, pull_request].
func flow(items ...string) *yaml.Node {
	s := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, i := range items {
		s.Content = append(s.Content, scalar(i))
	}
	return s
}
