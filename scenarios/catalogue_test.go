package scenarios_test

import (
	"regexp"
	"testing"

	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
	"github.com/zudojs/bank/scenarios/lab/mistakes/onpurpose"
)

// TestOneCatalogue: the stories bank mistake plays are exactly the
// catalogue's mistakes that have a story, in its order; every server made
// wrong on purpose makes a mistake of the catalogue; every entry has a
// name of the command line's form, a summary, a diagnosis and a command
// that shows it, and no name is given twice.
func TestOneCatalogue(t *testing.T) {
	t.Parallel()
	stories := mistakes.Stories()
	if len(stories) != len(scenarios.Mistakes) {
		t.Fatalf("the catalogue has %d stories, bank mistake plays %d", len(stories), len(scenarios.Mistakes))
	}
	for i, m := range scenarios.Mistakes {
		if m.Mistake != stories[i] {
			t.Errorf("story %d is %q, the catalogue's %q", i+1, m.Name, stories[i].Name)
		}
	}
	for _, s := range onpurpose.Servers {
		if m, ok := mistakes.Named(s.Name); !ok || m != s.Mistake {
			t.Errorf("the server made with %q is not the catalogue's mistake of that name", s.Name)
		}
	}
	name := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	seen := map[string]bool{}
	for _, m := range mistakes.Catalogue {
		if !name.MatchString(m.Name) || seen[m.Name] {
			t.Errorf("%q: a name is lower-case words joined by hyphens, given once", m.Name)
		}
		seen[m.Name] = true
		if m.Summary == "" || m.Diagnosis == "" || m.See == "" {
			t.Errorf("%s lacks its summary, its diagnosis or the command that shows it", m.Name)
		}
	}
}
