//go:build !windows

package pgserver

// installAdvice is how to install PostgreSQL, for the no-PostgreSQL error.
const installAdvice = "e.g. apt install postgresql, brew install postgresql"

// clientAdvice is how to install psql alone, for --keep.
const clientAdvice = "e.g. apt install postgresql-client, brew install libpq"

// exeSuffix ends the name of a program file.
const exeSuffix = ""
