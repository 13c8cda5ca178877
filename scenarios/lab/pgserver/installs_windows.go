package pgserver

import (
	"os"
	"path/filepath"
)

// installAdvice is how to install PostgreSQL, for the no-PostgreSQL error:
// on Windows, the installer puts it where bank looks.
const installAdvice = `e.g. with the installer from postgresql.org, into C:\Program Files\PostgreSQL\N, where bank looks`

// clientAdvice is how to install psql alone, for --keep.
const clientAdvice = `e.g. the installer from postgresql.org with its Command Line Tools only`

// On Windows, PostgreSQL's installer puts each version in
// %ProgramFiles%\PostgreSQL\N: those are searched (newest first) before
// the Unix places, which do not exist here.
func init() {
	root := os.Getenv("ProgramFiles")
	if root == "" {
		root = `C:\Program Files`
	}
	installPatterns = append([]string{filepath.Join(root, "PostgreSQL", "*", "bin")}, installPatterns...)
}

// exeSuffix ends the name of a program file.
const exeSuffix = ".exe"
