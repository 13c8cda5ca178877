package card

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
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
	text, err := Workflow(kind, command, points)
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
				if s.With["max-score"] != want || !strings.HasPrefix(fmt.Sprint(s.With["test-name"]), s.ID+": ") {
					t.Errorf("%s: max-score %v (want %d), test-name %v", s.ID, s.With["max-score"], want, s.With["test-name"])
				}
				graders[s.ID] = true
			case "classroom-resources/autograding-grading-reporter@v1":
				env, runners = s.Env, fmt.Sprint(s.With["runners"])
			}
		}
	}
	if len(graders) != len(grade.Checks) || runners != strings.Join(grade.Names(), ",") {
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
	if _, err := Workflow("jenkins", []string{"x"}, nil); err == nil {
		t.Error("an unknown workflow was written")
	}
}

func TestShellLine(t *testing.T) {
	if got := shellLine([]string{"env", "A=1", "python3", "my app.py", "it's"}); got != `env A=1 python3 'my app.py' 'it'\''s'` {
		t.Fatalf("got %s", got)
	}
}
