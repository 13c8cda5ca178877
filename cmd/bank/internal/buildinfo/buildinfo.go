// Package buildinfo says which build of bank this is: the version and
// commit make dist links in, or else what the Go toolchain recorded (a
// tagged module version, a pseudo-version, version control), so that
// bank version never claims a release that this is not.
package buildinfo

import (
	"regexp"
	"runtime/debug"
	"strings"
)

// pseudoRE matches a Go pseudo-version (v0.0.0-20060102150405-abcdef123456
// and its variants), whose last part is the commit.
var pseudoRE = regexp.MustCompile(`^v\d+\.\d+\.\d+-(?:[0-9A-Za-z.-]*\.)?(?:0\.)?\d{14}-([0-9a-f]{12})(?:\+.*)?$`)

// Describe returns the version and commit to report, from the source's
// version and the commit linked in. Set at link time (linked not empty),
// they are reported as they are. Otherwise: the module's version when
// the Go toolchain built a tagged release of it (go install …@v1.2.3),
// else the source's version marked -devel; and the commit from version
// control (-dirty when the tree had changes), else from a
// pseudo-version, else "unknown".
func Describe(source, linked string, info *debug.BuildInfo) (string, string) {
	if linked != "" {
		return source, linked
	}
	v, c := source+"-devel", "unknown"
	if info == nil {
		return v, c
	}
	mod := info.Main.Version
	if m := pseudoRE.FindStringSubmatch(mod); m != nil {
		c = m[1]
	} else if strings.HasPrefix(mod, "v") && !strings.Contains(mod, "+") {
		v = strings.TrimPrefix(mod, "v")
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		c = rev
		if modified == "true" {
			c += "-dirty"
		}
	}
	return v, c
}
