//go:build !windows

package pgserver

// installAdvice is how to install PostgreSQL, for the no-PostgreSQL error.
const installAdvice = "e.g. apt install postgresql, brew install postgresql"

// exeSuffix ends the name of a program file.
const exeSuffix = ""
