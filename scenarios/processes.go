package scenarios

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
)

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
