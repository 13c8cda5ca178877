package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/clientgrade"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
)

// bank grade client is a judge too, proven on clients its author did not
// write: testdata/clients holds clients written from bank grade client
// --contract alone, by other hands, in Python, Node.js (twice), Perl and Go. The
// correct ones must pass every check; each mistake (CLIENT_MISTAKE) must
// fail the checks it breaks, naming it, and pass the rest. make test
// grades each once; BANK_CORPUS_RUNS=20 grades each 20 times.

// clientCorpus is a client of testdata/clients: its interpreter, found on
// PATH, and its program.
func clientCorpus(t *testing.T, lang string) []string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "clients", lang))
	if err != nil {
		t.Fatal(err)
	}
	if lang == "go" {
		return []string{goBuild(t, dir)}
	}
	file := map[string]string{"python": "client.py", "node": "client.mjs", "perl": "client.pl", "lesson": "client.mjs"}[lang]
	interp := map[string]string{"python": "python3", "node": "node", "perl": "perl", "lesson": "node"}[lang]
	path, err := exec.LookPath(interp)
	if err != nil {
		corpusMissing(t, "no %s on PATH, for testdata/clients/%s", interp, lang)
	}
	return []string{path, filepath.Join(dir, file)}
}

// goBuild builds the Go program in dir, and returns its path.
func goBuild(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "client")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", dir, err, out)
	}
	return bin
}

// gradeClient grades a client on every check, CLIENT_MISTAKE=mistake in
// its environment (none when ""), and returns the card.
func gradeClient(t *testing.T, mistake string, client []string) (grade.Report, string) {
	t.Helper()
	graders <- struct{}{}
	defer func() { <-graders }()
	args := append([]string{"grade", "client", "--json", "--jobs", "4", "--"}, client...)
	cmd := command(t, pgtest.CacheDir(t), args...)
	cmd.Env = append(cmd.Env, "CLIENT_MISTAKE="+mistake)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var rep grade.Report
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("grade client %v printed no report (%v, exit %d): %s\n%s", client, jerr, exitOf(err), out, stderr.String())
	}
	matchesShape(t, "bank.grade/v1", out)
	if len(rep.Results) != len(clientgrade.Checks) {
		t.Fatalf("%d results for %d checks:\n%s", len(rep.Results), len(clientgrade.Checks), out)
	}
	return rep, string(out)
}

// clientGraded grades a client BANK_CORPUS_RUNS times (1 unless set) and
// fails the test on each run whose card differs from fail: the checks
// that must fail, each with the mistake it must name.
func clientGraded(t *testing.T, mistake string, fail map[string]string, client []string) {
	t.Helper()
	runs, _ := strconv.Atoi(os.Getenv("BANK_CORPUS_RUNS"))
	runs = max(1, runs)
	bad, unknown := 0, 0
	var took []time.Duration
	for i := range runs {
		start := time.Now()
		rep, out := gradeClient(t, mistake, client)
		took = append(took, time.Since(start))
		for _, r := range rep.Results {
			if r.Verdict == grade.Unknown {
				unknown++
				break
			}
		}
		// The timing checks may say they could not tell, on a machine as
		// busy as make test's: never that a correct client failed, nor
		// that a mistaken one passed.
		for i, r := range rep.Results {
			if r.Verdict == grade.Unknown && slices.Contains(timing, r.Name) {
				rep.Results[i].Verdict = map[bool]string{true: grade.Fail, false: grade.Pass}[fail[r.Name] != ""]
				rep.Results[i].Mistake = fail[r.Name]
				rep.Results[i].See = "bank (could not tell)"
			}
		}
		if d := deviations(rep, mistaken{fail: fail}); len(d) > 0 {
			bad++
			t.Errorf("run %d of %d: %s\n%s", i+1, runs, strings.Join(d, "; "), out)
		}
	}
	slices.Sort(took)
	t.Logf("CLIENT CORPUS %s: %d of %d runs as expected, %d with a check that could not tell; median grade %.1fs (load per core at the end %.1f)",
		t.Name(), runs-bad, runs, unknown, took[len(took)/2].Seconds(), pace.Load())
}

// timing are the client checks whose verdict rests on how long the
// client waited: on a busy machine they may not be able to tell.
var timing = []string{"hung", "backoff", "lockstep"}

func TestGradeClientCorpus(t *testing.T) {
	t.Parallel()
	// lesson: the lesson's own sendTransfer grown to the contract, its
	// backoff kept as the lesson writes it (a random 0 to 50 ms of
	// jitter, the least lockstep must take for jitter).
	for _, lang := range []string{"python", "node", "perl", "go", "lesson"} {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			clientGraded(t, "", nil, clientCorpus(t, lang))
		})
	}
	// The lab's own client, graded as a learner's is.
	t.Run("bank-send", func(t *testing.T) {
		t.Parallel()
		clientGraded(t, "", nil, []string{bankBinary(t), "send", "--client-contract"})
	})
	// Every check a retry happens in: a new key there is the mistake.
	retried := []string{"lost-reply", "hung", "busy", "rate-limited", "server-error", "unavailable", "backoff", "give-up", "lookup"}
	mistakes := []struct {
		lang, mistake string
		fail          map[string]string
	}{
		{"python", "new-key-per-attempt", each(retried, "new-key-per-attempt")},
		{"python", "retried-refusal", each([]string{"refused", "bad-request"}, "retried-refusal")},
		{"python", "no-backoff", map[string]string{"backoff": "no-backoff", "lockstep": "lockstep"}},
		{"python", "failed-not-unknown", map[string]string{"give-up": "failed-not-unknown", "lookup": "failed-not-unknown"}},
		{"node", "lockstep", map[string]string{"lockstep": "lockstep"}},
		{"node", "key-not-in-draft", map[string]string{"restart": "key-not-in-draft"}},
		{"node", "ignored-retry-after", each([]string{"busy", "rate-limited", "unavailable"}, "ignored-retry-after")},
		{"node", "reused-key", map[string]string{"one-key": "reused-key"}},
		{"perl", "no-timeout", map[string]string{"hung": "no-timeout"}},
		{"perl", "no-retry", each(append(retried, "lockstep"), "no-retry")},
	}
	for _, m := range mistakes {
		t.Run(fmt.Sprintf("%s/%s", m.lang, m.mistake), func(t *testing.T) {
			t.Parallel()
			clientGraded(t, m.mistake, m.fail, clientCorpus(t, m.lang))
		})
	}
}

// each maps every check to the one mistake.
func each(checks []string, mistake string) map[string]string {
	m := map[string]string{}
	for _, c := range checks {
		m[c] = mistake
	}
	return m
}

// TestClientStarters: each starter of bank grade client --starter, written
// as a learner gets it, passes what its README says (plain, the refusals,
// one-key) and fails the rest, naming what it lacks: retries, and the
// draft.
func TestClientStarters(t *testing.T) {
	t.Parallel()
	fail := each([]string{"lost-reply", "hung", "busy", "rate-limited", "server-error", "unavailable", "backoff", "lockstep", "give-up", "lookup"}, "no-retry")
	fail["restart"] = "key-not-in-draft"
	for _, lang := range clientgrade.Starters.Languages() {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "my-client")
			if out, err := command(t, pgtest.CacheDir(t), "grade", "client", "--starter", lang, dir).CombinedOutput(); err != nil {
				t.Fatalf("--starter %s: %v\n%s", lang, err, out)
			}
			var client []string
			switch lang {
			case "go":
				client = []string{goBuild(t, dir)}
			case "node":
				client = append(clientCorpus(t, "node")[:1], filepath.Join(dir, "client.mjs"))
			case "python":
				client = append(clientCorpus(t, "python")[:1], filepath.Join(dir, "client.py"))
			}
			clientGraded(t, "", fail, client)
		})
	}
}

// TestGradeClientUsage: bank grade client's bad command lines, each one
// line and exit 2; the workflows grade the client, not a server.
func TestGradeClientUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"grade", "client"}, "name your client's command after --"},
		{[]string{"grade", "client", "--only", "lookpu", "--", "true"}, `unknown check "lookpu" (did you mean lookup?) in --only`},
		{[]string{"grade", "client", "--points", "restrat=5", "--", "true"}, `unknown check "restrat" (did you mean restart?) in --points`},
		{[]string{"grade", "client", "--points", "restart", "--", "true"}, `--points takes NAME=N`},
		{[]string{"grade", "client", "--html", "-", "--json", "--", "true"}, "--html - and --json both write to standard output"},
		{[]string{"grade", "client", "--junit", "-", "--json", "--", "true"}, "--junit - writes to standard output"},
		{[]string{"grade", "client", "--junit", "/dev/null", "--", "true"}, "--junit /dev/null is a device"},
		{[]string{"grade", "client", "--workflow", "jenkins", "--", "true"}, `no workflow "jenkins": choose actions or classroom`},
		{[]string{"grade", "client", "--attempt-timeout", "1ms", "--", "true"}, "--attempt-timeout must be between 100ms and 10s"},
		{[]string{"send", "--client-contract"}, "--client-contract: BANK_URL, BANK_TOKEN and DRAFTS must be set"},
		{[]string{"send", "--client-contract", "--from", "1"}, "--client-contract: it reads everything from the environment"},
	} {
		r := cli(t, nil, c.args...)
		if r.code != exitcode.Usage || !strings.Contains(r.stderr, c.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
	for kind, want := range map[string]string{
		"actions":   "bank grade client --junit grade.xml -- node client.mjs",
		"classroom": "bank grade client --strict --only lookup -- node client.mjs",
	} {
		r := cli(t, nil, "grade", "client", "--workflow", kind, "--", "node", "client.mjs")
		if r.code != exitcode.OK || !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "bank grade --") {
			t.Errorf("--workflow %s: exit %d, no %q in:\n%s", kind, r.code, want, r.stdout)
		}
	}
}

// TestGradeClientFiles: --junit and --html write the client's card: one
// testcase per check under bank grade client, and a page with each
// check's diagram of the attempts the front saw.
func TestGradeClientFiles(t *testing.T) {
	t.Parallel()
	graders <- struct{}{}
	defer func() { <-graders }()
	dir := t.TempDir()
	junit, page := filepath.Join(dir, "grade.xml"), filepath.Join(dir, "grade.html")
	cmd := command(t, pgtest.CacheDir(t), "grade", "client", "--only", "plain,lost-reply", "--junit", junit, "--html", page, "--", bankBinary(t), "send", "--client-contract")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("grade client: %v\n%s", err, out)
	}
	x, _ := os.ReadFile(junit)
	h, _ := os.ReadFile(page)
	for _, want := range []string{`<testsuite name="bank grade client" tests="2" failures="0"`, `name="ATTEMPT_TIMEOUT_MS"`, `classname="bank.grade.client"`} {
		if !strings.Contains(string(x), want) {
			t.Errorf("the JUnit file lacks %q:\n%s", want, x)
		}
	}
	if strings.Count(string(h), "<svg") != 2 || !strings.Contains(string(h), "<title>bank grade client: ") || !strings.Contains(string(h), "front") {
		t.Errorf("the page has %d diagrams (want 2), or lacks its title or lanes:\n%.2000s", strings.Count(string(h), "<svg"), h)
	}
}
