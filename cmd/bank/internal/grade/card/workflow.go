package card

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
)

// Workflows are the CI files bank grade --workflow writes for a learner's
// repository: "actions", one GitHub Actions job that grades the server and
// publishes the JUnit file; "classroom", GitHub Classroom's autograding,
// one test per check with its points (a check passes, or earns nothing).
var Workflows = []string{"actions", "classroom"}

// Workflow is the workflow of kind for grading command (a shell line is
// made of it) in the repository's root, each check worth points[name]
// (1 unless named).
func Workflow(kind string, command []string, points map[string]int) (string, error) {
	line := shellLine(command)
	var b strings.Builder
	switch kind {
	case "actions":
		fmt.Fprintf(&b, `# .github/workflows/grade.yml: bank grade on every push, the report card
# in the job's log and each check as a test in the run's summary.
name: grade
on: [push, pull_request, workflow_dispatch]
permissions:
  contents: read
  checks: write
jobs:
  grade:
    runs-on: ubuntu-latest
    timeout-minutes: 15
    steps:
%s      - name: bank grade
        run: bank grade --junit grade.xml -- %s
      - name: publish the checks
        if: success() || failure()
        uses: mikepenz/action-junit-report@v5
        with:
          report_paths: grade.xml
          include_passed: true
`, firstSteps(command), line)
	case "classroom":
		fmt.Fprintf(&b, `# .github/workflows/classroom.yml: GitHub Classroom's autograding, one test
# per check of bank grade, each worth its points when it passes.
name: Autograding Tests
on: [push, repository_dispatch]
permissions:
  checks: write
  actions: read
  contents: read
jobs:
  run-autograding-tests:
    runs-on: ubuntu-latest
    if: github.actor != 'github-classroom[bot]'
    steps:
%s`, firstSteps(command))
		var ids []string
		for _, c := range grade.Checks {
			worth, ok := points[c.Name]
			if !ok {
				worth = 1
			}
			id := c.Name
			ids = append(ids, id)
			fmt.Fprintf(&b, `      - name: %s
        id: %s
        uses: classroom-resources/autograding-command-grader@v1
        with:
          test-name: '%s: %s'
          command: bank grade --strict --only %s -- %s
          timeout: 5
          max-score: %d
`, c.Name, id, c.Name, strings.ReplaceAll(c.Title, "'", "''"), c.Name, line, worth)
		}
		b.WriteString(`      - name: Autograding Reporter
        uses: classroom-resources/autograding-grading-reporter@v1
        env:
`)
		for _, id := range ids {
			fmt.Fprintf(&b, "          %s_RESULTS: \"${{steps.%s.outputs.result}}\"\n", strings.ToUpper(id), id)
		}
		fmt.Fprintf(&b, "        with:\n          runners: %s\n", strings.Join(ids, ","))
	default:
		return "", fmt.Errorf("no workflow %q: choose %s", kind, strings.Join(Workflows, " or "))
	}
	return b.String(), nil
}

// firstSteps check the repository out and install Node.js, the server's
// dependencies and bank.
func firstSteps(command []string) string {
	return `      - uses: actions/checkout@v4
      - uses: actions/setup-node@v4
        with:
          node-version: 22
` + setupSteps(command, "      ") + `      - name: install bank (brings its own PostgreSQL)
        run: npm install -g @zudojs/bank
`
}

// setupSteps are the steps that install the server's own dependencies, as
// far as its command tells: npm's for Node.js, psycopg for Python, a
// build for a program in the repository (the Go starter's ./server).
func setupSteps(command []string, indent string) string {
	prog := filepath.Base(command[0])
	switch {
	case prog == "node" || prog == "npm" || prog == "npx":
		return indent + "- name: the server's dependencies\n" + indent + "  run: npm install\n"
	case strings.HasPrefix(prog, "python"):
		return indent + "- uses: actions/setup-python@v5\n" + indent + "  with:\n" + indent + "    python-version: '3.12'\n" +
			indent + "- name: the server's dependencies\n" + indent + "  run: pip install \"psycopg[binary]\"\n"
	case strings.HasPrefix(command[0], "./"):
		return indent + "- uses: actions/setup-go@v5\n" + indent + "  with:\n" + indent + "    go-version: stable\n" +
			indent + "- name: build the server (for a Go server; change it for another language)\n" + indent + "  run: go build -o " + command[0][2:] + " .\n"
	}
	return ""
}

// shellLine quotes args for a POSIX shell, only where they need it.
func shellLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
