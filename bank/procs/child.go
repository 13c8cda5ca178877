package procs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// ReadyEnv is the variable that asks a child to announce readiness with
// one machine-readable line on its standard output, "ready ADDRESS",
// instead of the banner it prints for people.
const ReadyEnv = "BANK_READY_LINE"

// Child is a process the lab started and controls: it dies with the lab,
// its standard error is kept for the error that says why it stopped, and
// the faults the lab injects are verbs on it.
type Child struct {
	Addr   string // what its ready line announced
	cmd    *exec.Cmd
	stderr *Tail
}

// StartChild starts cmd (its Env, if set, is extended) and waits until it
// announces readiness. If it exits first, the error carries the end of
// what it wrote to standard error.
func StartChild(cmd *exec.Cmd) (*Child, error) {
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, ReadyEnv+"=1")
	c := &Child{cmd: cmd, stderr: &Tail{}}
	cmd.Stdout, cmd.Stderr = nil, c.stderr // its standard output is the ready line's pipe
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := Start(cmd, Kill); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		c.Kill()
		why := strings.TrimSpace(c.stderr.String())
		if why == "" {
			why = fmt.Sprintf("it printed %q (%v)", line, err)
		}
		return c, fmt.Errorf("%s did not start: %s", cmd.Args[0], why)
	}
	c.Addr = addr
	go io.Copy(io.Discard, out)
	return c, nil
}

// Serve starts `bank serve` (binary) on a free loopback port, serving the
// database at dbURL in place, and waits until it listens. The database
// URL goes in the child's environment (DATABASE_URL), never on its
// command line, where every local user could read it.
func Serve(ctx context.Context, binary, dbURL string, args ...string) (*Child, error) {
	spec := Spec{Path: binary, Args: append([]string{"serve", "--in-place", "--addr", "127.0.0.1:0"}, args...), Env: []string{"DATABASE_URL=" + dbURL}}
	return StartChild(spec.Command(ctx))
}

// Process is the running child, for the faults of this package.
func (c *Child) Process() *os.Process { return c.cmd.Process }

// PID is the child's process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Kill ends the child at once, as a crash would, and waits for it.
func (c *Child) Kill() error {
	if c.cmd.ProcessState != nil {
		return nil
	}
	c.cmd.Process.Kill()
	c.cmd.Wait()
	return nil
}

// Stop ends the child the way an orderly restart does (SIGTERM) and
// waits for it.
func (c *Child) Stop() error {
	if c.cmd.ProcessState != nil {
		return nil
	}
	Terminate(c.cmd.Process)
	return c.cmd.Wait()
}

// Tail keeps the last few kilobytes a process wrote.
type Tail struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *Tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(b)
	if t.buf.Len() > 4096 {
		t.buf.Next(t.buf.Len() - 4096)
	}
	return len(b), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

// LastLines is at most the last n lines kept.
func (t *Tail) LastLines(n int) string {
	lines := strings.Split(strings.TrimRight(t.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
