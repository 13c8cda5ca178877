package scenarios

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"

	"github.com/zudojs/bank/bank/pgserver"
)

// Mistake is one row of the lesson's table of mistakes: the same steps run
// twice, once with the mistake and once without, each in a fresh bank.
type Mistake struct {
	Name    string
	Summary string // the mistake, in the table's words
	Happens string // what it costs
	Fix     string // what the correct version does instead
	Explain map[string]string
	// Steps tells the story; broken says which half is running. Intents
	// that the mistake breaks are declared with BrokenIf(broken).
	Steps func(ctx context.Context, lab *Lab, broken bool) error
}

// Mistakes, in the order of the lesson's table.
var Mistakes = []*Mistake{
	NewKeyPerAttempt,
	MemoryKeys,
	SecondTransaction,
	UnscopedKeys,
	NoFingerprint,
	Replay500,
	NoLockExpiry,
	NoFencing,
}

// LookupMistake finds a mistake by name.
func LookupMistake(name string) (*Mistake, bool) {
	for _, m := range Mistakes {
		if m.Name == name {
			return m, true
		}
	}
	return nil, false
}

// MistakeNames lists the mistakes' names in order.
func MistakeNames() []string {
	names := make([]string, len(Mistakes))
	for i, m := range Mistakes {
		names[i] = m.Name
	}
	return names
}

// BrokenIf marks the intent as broken by the story when broken is true.
func (i *Intent) BrokenIf(broken bool) *Intent {
	if broken {
		i.broken = true
	}
	return i
}

// MistakeVerdict is how both halves ended.
type MistakeVerdict struct {
	Mistake       string
	Broken, Fixed Verdict
}

// Reproduced: the mistake did its damage and the fix held.
func (v MistakeVerdict) Reproduced() bool {
	return v.Broken.Reproduced && v.Broken.ShowsBreak && v.Fixed.Reproduced && !v.Fixed.ShowsBreak
}

// RunMistake runs the broken half, then the fixed half, then prints their
// checks side by side.
func RunMistake(ctx context.Context, cluster *pgserver.Cluster, m *Mistake, w io.Writer, o Options) (MistakeVerdict, error) {
	v := MistakeVerdict{Mistake: m.Name}
	var err error
	for _, broken := range []bool{true, false} {
		name, summary := m.Name+", broken", m.Summary+": "+m.Happens
		if !broken {
			name, summary = m.Name+", fixed", m.Fix
		}
		sc := &Scenario{Name: name, Summary: summary, Explain: m.Explain,
			Run: func(ctx context.Context, lab *Lab) error { return m.Steps(ctx, lab, broken) }}
		var half Verdict
		if half, err = Run(ctx, cluster, sc, w, o); err != nil {
			return v, err
		}
		if broken {
			v.Broken = half
		} else {
			v.Fixed = half
		}
	}
	newPrinter(w, &Scenario{Name: m.Name}, o).sideBySide(v)
	return v, nil
}

// ServeProcess is a `bank serve` started by a scenario, on the scenario's
// own database.
type ServeProcess struct {
	URL string
	cmd *exec.Cmd
}

// Serve starts `bank serve` as a real process on a loopback port, serving
// the scenario's database in place. It is stopped when the scenario ends,
// or earlier with Stop.
func (l *Lab) Serve(ctx context.Context, args ...string) (*ServeProcess, error) {
	if l.bank == "" {
		return nil, fmt.Errorf("this scenario starts bank serve processes: the lab needs the bank binary (Options.Bank)")
	}
	p, err := StartServe(ctx, l.bank, l.URL, args...)
	if p != nil {
		l.processes = append(l.processes, p)
	}
	return p, err
}

// StartServe starts the bank binary's serve command on a loopback port,
// serving the database at dbURL in place, and waits until it listens.
func StartServe(ctx context.Context, binary, dbURL string, args ...string) (*ServeProcess, error) {
	all := append([]string{"serve", "--database-url", dbURL, "--in-place", "--addr", "127.0.0.1:0"}, args...)
	cmd := exec.CommandContext(ctx, binary, all...)
	cmd.Stderr = io.Discard
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &ServeProcess{cmd: cmd}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "bank is serving on ") {
		p.Stop()
		return p, fmt.Errorf("bank serve did not start: %q %v", line, err)
	}
	p.URL = strings.Fields(strings.TrimPrefix(line, "bank is serving on "))[0]
	go io.Copy(io.Discard, out)
	return p, nil
}

// Kill ends the process with SIGKILL, as a crash would.
func (p *ServeProcess) Kill() error {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	return nil
}

// PID is the server's process id.
func (p *ServeProcess) PID() int { return p.cmd.Process.Pid }

// Stop ends the process the way an orderly restart does (SIGTERM).
func (p *ServeProcess) Stop() error {
	if p.cmd.ProcessState != nil {
		return nil
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	return p.cmd.Wait()
}
