// Command gotest prints go test -json's stream as plain go test prints its
// own (a line per package; a failing test's output whole), and writes
// every skipped test, with the reason its output gave, to the file named
// by its one argument. make test runs go test this way so that go test's
// cache may answer for a package nothing of which changed (its line then
// says "(cached)"), while a skip is still reported from a cached run: the
// cache replays a package's events, its skips among them.
//
// Usage: go test -json ... | go run ./.ci/gotest SKIPS
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64 // seconds, at a test's or package's end
}

// took is a top-level test's time.
type took struct {
	test    string
	seconds float64
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go test -json ... | go run ./.ci/gotest SKIPS")
		os.Exit(2)
	}
	skips, err := os.OpenFile(os.Args[1], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(1)
	}
	defer skips.Close()
	out := bufio.NewWriter(os.Stdout)
	// The output of each test (package and name) so far, and of each
	// package outside its tests.
	tests := map[[2]string][]string{}
	times := map[string][]took{} // each package's top-level tests, as they end
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		var e event
		if err := json.Unmarshal(in.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(out, in.Text()) // not an event: go test's own words
			out.Flush()
			continue
		}
		key := [2]string{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "output":
			tests[key] = append(tests[key], e.Output)
		case "fail":
			if e.Test != "" {
				for _, line := range tests[key] {
					if !progress(line) {
						fmt.Fprint(out, line)
					}
				}
				delete(tests, key)
				break
			}
			fallthrough
		case "pass", "skip":
			if e.Test != "" && !strings.Contains(e.Test, "/") {
				times[e.Package] = append(times[e.Package], took{e.Test, e.Elapsed})
			}
			if e.Test != "" { // a test skipped: said at the end of make test
				if e.Action == "skip" {
					fmt.Fprintf(skips, "%s %s: %s\n", e.Package, e.Test, reason(tests[key]))
				}
				delete(tests, key)
				break
			}
			for _, line := range tests[key] { // the package's own lines: ok, FAIL, no test files
				if t := strings.TrimSpace(line); t != "PASS" && t != "" {
					fmt.Fprint(out, line)
				}
			}
			delete(tests, key)
			if e.Elapsed >= longPackage {
				fmt.Fprintln(out, longest(times[e.Package]))
			}
			delete(times, e.Package)
		}
		out.Flush()
	}
	out.Flush()
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(1)
	}
}

// longPackage is the time, in seconds, past which a package's line is
// followed by its longest tests: what to look at when go test's -timeout
// comes near.
const longPackage = 120

// longest is a line naming the five longest of ts that took a second or
// more (a parallel test's time includes the time it waited for its turn).
func longest(ts []took) string {
	sort.Slice(ts, func(i, j int) bool { return ts[i].seconds > ts[j].seconds })
	var b strings.Builder
	b.WriteString("    its longest tests:")
	for i, t := range ts {
		if i == 5 || t.seconds < 1 {
			break
		}
		fmt.Fprintf(&b, " %s %.0fs", t.test, t.seconds)
	}
	return b.String()
}

// progress is a line go test prints only under -v: a test started,
// paused, went on or passed.
func progress(line string) bool {
	t := strings.TrimSpace(line)
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- SKIP"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// reason is what a skipped test said, on one line.
func reason(lines []string) string {
	var said []string
	for _, line := range lines {
		if t := strings.TrimSpace(line); t != "" && !progress(line) {
			said = append(said, t)
		}
	}
	if len(said) == 0 {
		return "(no reason given)"
	}
	return strings.Join(said, " ")
}
