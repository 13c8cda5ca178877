package card

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
	"gopkg.in/yaml.v3"
)

type workflowFile struct {
	Jobs map[string]struct {
		Steps []struct {
			Name string            `yaml:"name"`
			ID   string            `yaml:"id"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]any    `yaml:"with"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func parseWorkflow(t *testing.T, kind string, command []string, points map[string]int) workflowFile {
	t.Helper()
	text, err := Workflow(kind, Server(command, 2*time.Second), points)
	if err != nil {
		t.Fatal(err)
	}
	var w workflowFile
	if err := yaml.Unmarshal([]byte(text), &w); err != nil {
		t.Fatalf("the %s workflow is not YAML: %v\n%s", kind, err, text)
	}
	if len(w.Jobs) != 1 {
		t.Fatalf("%d jobs:\n%s", len(w.Jobs), text)
	}
	return w
}

// TestClassroomWorkflow: one autograding test per check, grading only it
// (strictly: a recommended check's failure fails its test), worth its
// points, and every one handed to the reporter.
func TestClassroomWorkflow(t *testing.T) {
	w := parseWorkflow(t, "classroom", []string{"python3", "server.py"}, map[string]int{"crash": 5, "pause": 5})
	graders, env, runners := map[string]bool{}, map[string]string{}, ""
	for _, job := range w.Jobs {
		for _, s := range job.Steps {
			switch s.Uses {
			case "classroom-resources/autograding-command-grader@v1":
				want := 1
				if s.ID == "crash" || s.ID == "pause" {
					want = 5
				}
				if cmd := fmt.Sprint(s.With["command"]); cmd != "bank grade --strict --only "+s.ID+" -- python3 server.py" {
					t.Errorf("%s: command %q", s.ID, cmd)
				}
				if s.With["max-score"] != want || s.With["test-name"] != s.ID {
					t.Errorf("%s: max-score %v (want %d), test-name %v", s.ID, s.With["max-score"], want, s.With["test-name"])
				}
				graders[s.ID] = true
			case "classroom-resources/autograding-grading-reporter@v1":
				env, runners = s.Env, fmt.Sprint(s.With["runners"])
			}
		}
	}
	if len(graders) != len(grade.Checks) || runners != strings.Join(grade.Names(), ",\n") {
		t.Fatalf("%d graders for %d checks; runners %q", len(graders), len(grade.Checks), runners)
	}
	for _, name := range grade.Names() {
		if env[strings.ToUpper(name)+"_RESULTS"] != "${{steps."+name+".outputs.result}}" {
			t.Errorf("the reporter does not get %s's result: %v", name, env)
		}
	}
}

// TestActionsWorkflow: one job that installs what the server needs and
// bank, grades, and publishes the JUnit file even when the grade failed.
func TestActionsWorkflow(t *testing.T) {
	for cmd, setup := range map[string]string{"node server.js": "npm install", "python3 app.py": `pip install "psycopg[binary]"`, "./server": "go build -o server ."} {
		w := parseWorkflow(t, "actions", strings.Fields(cmd), nil)
		var runs []string
		published := false
		for _, job := range w.Jobs {
			for _, s := range job.Steps {
				runs = append(runs, s.Run)
				if strings.HasPrefix(s.Uses, "mikepenz/action-junit-report@") && s.With["report_paths"] == "grade.xml" {
					published = true
				}
			}
		}
		all := strings.Join(runs, "\n")
		for _, want := range []string{setup, "npm install -g @zudojs/bank", "bank grade --junit grade.xml -- " + cmd} {
			if !strings.Contains(all, want) {
				t.Errorf("%s: no step runs %q:\n%s", cmd, want, all)
			}
		}
		if !published {
			t.Errorf("%s: the JUnit file is not published", cmd)
		}
	}
	if _, err := Workflow("jenkins", Server([]string{"x"}, time.Second), nil); err == nil {
		t.Error("an unknown workflow was written")
	}
}

func TestShellLine(t *testing.T) {
	if got := shellLine([]string{"env", "A=1", "python3", "my app.py", "it's", "", "./server"}); got != `env 'A=1' python3 'my app.py' 'it'\''s' '' ./server` {
		t.Fatalf("got %s", got)
	}
}

// awkward are server commands with every kind of name a learner's files
// may have: spaces, a colon, a #, quotes of both kinds, non-ASCII, what a
// shell would expand ($, `, *, ~), a backslash, a tab and a newline, and
// a name long enough that the command is folded over lines.
var awkward = [][]string{
	{"node", "server: v2.js"},
	{"python3", "my app #2.py"},
	{"node", `it's "quoted".js`, "--flag=a b"},
	{"python3", "café ₦ naïve/sérveur.py"},
	{"./my server", "$HOME", "`id`", "*.js", "~", `back\slash`, "a  b", "tab\there", "new\nline", ""},
	{"node", "a very long file name that goes on and on well past the eighty columns of the workflow file.js", "--port=8080"},
	{"python3", strings.Repeat("it's a 'quoted' name, ", 8) + ".py"},
	{"-", "#", ":", "- x", "? y", "{a}", "[b]", "&c", "!d", "|e", ">f", "%g", "@h", "on", "yes", "3.12", "null"},
}

// shells are the POSIX shells at hand (GitHub's run steps use bash; a
// classroom grader's command goes through sh).
func shells(t *testing.T) []string {
	var got []string
	for _, sh := range []string{"sh", "bash", "dash"} {
		if p, err := exec.LookPath(sh); err == nil {
			got = append(got, p)
		}
	}
	if len(got) == 0 {
		t.Fatal("no POSIX shell on PATH")
	}
	return got
}

// argsOf runs script in shell with program a function that prints its
// arguments, each ended by a NUL, and returns the arguments it got: what
// the program would have been started with.
func argsOf(t *testing.T, shell, program, script string) []string {
	t.Helper()
	prog := program + `() { printf '%s\0' "$@"; }; `
	out, err := exec.Command(shell, "-c", prog+script).Output()
	if err != nil {
		t.Fatalf("%s -c %q: %v", shell, script, err)
	}
	args := strings.Split(string(out), "\x00")
	return args[:len(args)-1]
}

// TestWorkflowAwkwardNames: for every awkward command, both workflows
// parse as YAML, fit 80 columns, and every command in them, run by a
// shell, starts its program with exactly the arguments given; yamllint
// (strict: warnings count) finds nothing.
func TestWorkflowAwkwardNames(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, command := range awkward {
		for _, kind := range Workflows {
			text, err := Workflow(kind, Server(command, 2*time.Second), map[string]int{"crash": 5})
			if err != nil {
				t.Fatal(err)
			}
			for n, l := range strings.Split(text, "\n") {
				if w := utf8.RuneCountInString(l); w > 80 {
					t.Errorf("%s %q: line %d is %d columns: %q", kind, command, n+1, w, l)
				}
			}
			file := filepath.Join(dir, fmt.Sprintf("%s-%d.yml", kind, i))
			os.WriteFile(file, []byte(text), 0o644)
			files = append(files, file)
			w := parseWorkflow(t, kind, command, nil)
			checked := 0
			for _, job := range w.Jobs {
				for _, s := range job.Steps {
					script, want := "", []string(nil)
					switch {
					case s.Name == "bank grade":
						script, want = s.Run, append([]string{"grade", "--junit", "grade.xml", "--"}, command...)
					case strings.HasPrefix(s.Uses, "classroom-resources/autograding-command-grader@"):
						script, want = fmt.Sprint(s.With["command"]), append([]string{"grade", "--strict", "--only", s.ID, "--"}, command...)
					case strings.HasPrefix(s.Name, "build the server"):
						got := argsOf(t, "sh", "go", s.Run)
						if wantBuild := []string{"build", "-o", command[0][2:], "."}; !slices.Equal(got, wantBuild) {
							t.Errorf("%s: the build step gives go %q, want %q", kind, got, wantBuild)
						}
						continue
					default:
						continue
					}
					for _, sh := range shells(t) {
						if got := argsOf(t, sh, "bank", script); !slices.Equal(got, want) {
							t.Errorf("%s, step %q, in %s:\n%s\nstarts bank with %q\nwant %q", kind, s.Name, sh, script, got, want)
						}
					}
					checked++
				}
			}
			if wantN := map[string]int{"actions": 1, "classroom": len(grade.Checks)}[kind]; checked != wantN {
				t.Errorf("%s %q: %d commands checked, want %d", kind, command, checked, wantN)
			}
		}
	}
	if _, err := exec.LookPath("yamllint"); err != nil {
		pgtest.Skip(t, "YAMLLINT IS MISSING: the workflows were not linted (apt-get install yamllint)")
	}
	out, err := exec.Command("yamllint", append([]string{"--strict", "-f", "parsable"}, files...)...).CombinedOutput()
	if err != nil {
		t.Errorf("yamllint --strict: %v\n%s", err, out)
	}
}
