package main

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// commit is the revision bank was built from. make dist sets it, and the
// version, at link time (-ldflags "-X main.version=… -X main.commit=…");
// a build without them (go run, go build, go install) says what the Go
// toolchain recorded instead, so that bank version and bank --version
// never claim a release that this is not.
var commit string

func init() {
	info, _ := debug.ReadBuildInfo()
	version, commit = describeBuild(version, commit, info)
}

// pseudoRE matches a Go pseudo-version (v0.0.0-20060102150405-abcdef123456
// and its variants), whose last part is the commit.
var pseudoRE = regexp.MustCompile(`^v\d+\.\d+\.\d+-(?:[0-9A-Za-z.-]*\.)?(?:0\.)?\d{14}-([0-9a-f]{12})(?:\+.*)?$`)

// describeBuild returns the version and commit to report. Set at link
// time (commit not empty), they are reported as they are. Otherwise: the
// module's version when the Go toolchain built a tagged release of it
// (go install …@v1.2.3), else the source's version marked -devel; and the
// commit from version control (-dirty when the tree had changes), else
// from a pseudo-version, else "unknown".
func describeBuild(source, linked string, info *debug.BuildInfo) (string, string) {
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

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print bank's version and the commit it was built from",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("bank version takes no arguments, got %q (see bank version --help)", strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(a.io.Out, "bank %s\ncommit %s\nbuilt with %s for %s/%s\n", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
