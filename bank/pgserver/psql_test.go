package pgserver

import (
	"strings"
	"testing"
)

// TestWindowsPsql: on Windows --keep prints one command for cmd.exe and
// one for PowerShell. cmd.exe's set "VAR=x" takes exactly what is between
// the quotes (a bare set VAR=x && keeps the space before &&); PowerShell
// sets a variable with $env:, in a single-quoted string where a quote is
// doubled.
func TestWindowsPsql(t *testing.T) {
	pass := `C:\Users\Ada O'Brien\AppData\Local\bank\pg15-1a2b3c4d\slots\0.pgpass`
	got := windowsPsql(pass, 50123, "bank_s_naive_1")
	psql := " psql -h 127.0.0.1 -p 50123 -U postgres bank_s_naive_1"
	want := []ShellCommand{
		{"cmd.exe", `set "PGPASSFILE=` + pass + `" &&` + psql},
		{"PowerShell", `$env:PGPASSFILE = 'C:\Users\Ada O''Brien\AppData\Local\bank\pg15-1a2b3c4d\slots\0.pgpass';` + psql},
	}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s:\n got %s\nwant %s", want[i].Shell, got[i].Line, want[i].Line)
		}
	}
	if strings.Contains(got[0].Line, " && set") || strings.Contains(got[1].Line, "&&") {
		t.Errorf("a form the shell gets wrong: %q", got)
	}
}
