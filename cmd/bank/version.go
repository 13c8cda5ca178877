package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/cmd/bank/internal/buildinfo"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
)

// commit is the revision bank was built from. make dist sets it, and the
// version, at link time (-ldflags "-X main.version=… -X main.commit=…");
// a build without them (go run, go build, go install) says what the Go
// toolchain recorded instead, so that bank version and bank --version
// never claim a release that this is not.
var commit string

func init() {
	info, _ := debug.ReadBuildInfo()
	version, commit = buildinfo.Describe(version, commit, info)
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print bank's version and the commit it was built from",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return exitcode.Usagef("bank version takes no arguments, got %q (see bank version --help)", strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(a.io.Out, versionText())
			return err
		},
	}
}

// versionText is what bank version and bank --version print, the same
// three lines: the version, the commit, and the Go and platform it was
// built with.
func versionText() string {
	return fmt.Sprintf("bank %s\ncommit %s\nbuilt with %s for %s/%s\n", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
