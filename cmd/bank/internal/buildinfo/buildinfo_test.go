package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	t.Parallel()
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		name          string
		linked        string
		info          *debug.BuildInfo
		version, comm string
	}{
		{"make dist", "4d0ba88f0c1234567890abcdef1234567890abcd", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "0.1.0", "4d0ba88f0c1234567890abcdef1234567890abcd"},
		{"no build info", "", nil, "0.1.0-devel", "unknown"},
		{"go run, no VCS", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "0.1.0-devel", "unknown"},
		{"go build in a clean checkout", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20251201095300-4d0ba88f0c12"}, Settings: vcs("4d0ba88f0c1234567890abcdef1234567890abcd", "false")}, "0.1.0-devel", "4d0ba88f0c1234567890abcdef1234567890abcd"},
		{"go build with changes", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20251201095300-4d0ba88f0c12+dirty"}, Settings: vcs("4d0ba88f0c1234567890abcdef1234567890abcd", "true")}, "0.1.0-devel", "4d0ba88f0c1234567890abcdef1234567890abcd-dirty"},
		{"go install @v0.2.0", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}}, "0.2.0", "unknown"},
		{"go install @latest, untagged", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20251201095300-4d0ba88f0c12"}}, "0.1.0-devel", "4d0ba88f0c12"},
	} {
		v, comm := Describe("0.1.0", c.linked, c.info)
		if v != c.version || comm != c.comm {
			t.Errorf("%s: got %q, %q; want %q, %q", c.name, v, comm, c.version, c.comm)
		}
	}
}
