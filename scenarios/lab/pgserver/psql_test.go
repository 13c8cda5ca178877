package pgserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestWindowsPsql: on Windows --keep prints one command for cmd.exe and
// one for PowerShell. cmd.exe's set "VAR=x" takes exactly what is between
// the quotes (a bare set VAR=x && keeps the space before &&); PowerShell
// sets a variable with $env:, in a single-quoted string where a quote is
// doubled, and runs a program named by a string with &. The psql is the
// installation's own, by its path, when it has one.
func TestWindowsPsql(t *testing.T) {
	pass := `C:\Users\Ada O'Brien\AppData\Local\bank\pg15-1a2b3c4d\slots\0.pgpass`
	own := `C:\Program Files\PostgreSQL\17\bin\psql.exe`
	args := " -h 127.0.0.1 -p 50123 -U postgres bank_s_naive_1"
	for _, c := range []struct {
		psql        string
		cmd, pshell string
	}{
		{"", "psql", "psql"},
		{own, `"` + own + `"`, `& '` + own + `'`},
		{`C:\Users\O'Brien\pg\bin\psql.exe`, `"C:\Users\O'Brien\pg\bin\psql.exe"`, `& 'C:\Users\O''Brien\pg\bin\psql.exe'`},
	} {
		got := windowsPsql(c.psql, pass, 50123, "bank_s_naive_1")
		want := []ShellCommand{
			{"cmd.exe", `set "PGPASSFILE=` + pass + `" && ` + c.cmd + args},
			{"PowerShell", `$env:PGPASSFILE = 'C:\Users\Ada O''Brien\AppData\Local\bank\pg15-1a2b3c4d\slots\0.pgpass'; ` + c.pshell + args},
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
}

// TestPsqlOfTheInstallation: --keep's command runs the psql beside the
// server's own programs when the installation has one, named by its path
// and quoted for the shell whatever the path holds; the shell hands it
// the connection string as one argument. An installation without psql
// (the npm registry's) gets psql from PATH and a note on where to get a
// client and how else to connect.
func TestPsqlOfTheInstallation(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the Unix form; TestWindowsPsql has Windows's")
	}
	for _, dir := range []string{"pg", "Ada's PostgreSQL $HOME `x` \"17\""} {
		root := filepath.Join(t.TempDir(), dir)
		if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		s := &Server{Binaries: Binaries{Dir: root}, slot: &slot{dir: "/run/bank/slot 0"}, port: 5432}
		conninfo := "host=/run/bank/slot 0 port=5432 user=postgres dbname=bank_s_naive_1"

		// No psql of its own: psql from PATH, and a note.
		got := s.Psql("bank_s_naive_1")
		if len(got) != 1 || got[0].Line != "psql '"+conninfo+"'" {
			t.Errorf("without psql: %q", got)
		}
		note := s.NoPsqlNote("bank_s_naive_1")
		if s.OwnPsql() || !strings.Contains(note, "has no psql of its own") || !strings.Contains(note, clientAdvice) || !strings.Contains(note, "\n  "+s.URL("bank_s_naive_1")) {
			t.Errorf("without psql, the note: %q", note)
		}

		// Its own psql: by its path, which the shell finds, given the
		// connection string as one argument.
		out := filepath.Join(t.TempDir(), "argv")
		psql := filepath.Join(root, "bin", "psql")
		if err := os.WriteFile(psql, []byte("#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" >'"+out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		got = s.Psql("bank_s_naive_1")
		if len(got) != 1 || !strings.HasSuffix(got[0].Line, " '"+conninfo+"'") {
			t.Fatalf("with psql: %q", got)
		}
		if note := s.NoPsqlNote("bank_s_naive_1"); note != "" || !s.OwnPsql() {
			t.Errorf("with psql, a note: %q", note)
		}
		if b, err := exec.Command("sh", "-c", got[0].Line).CombinedOutput(); err != nil {
			t.Fatalf("sh -c %s: %v %s", got[0].Line, err, b)
		}
		argv, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if want := psql + "\n" + conninfo + "\n"; string(argv) != want {
			t.Errorf("sh -c %s ran\n%s\nwant\n%s", got[0].Line, argv, want)
		}
	}
}
