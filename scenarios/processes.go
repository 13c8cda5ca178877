package scenarios

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

	"github.com/zudojs/bank/bank/procs"
)

// ServeProcess is a `bank serve` started by a scenario, on the scenario's
// own database.
type ServeProcess struct {
	URL    string
	cmd    *exec.Cmd
	stderr *tailBuffer
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
// serving the database at dbURL in place, and waits until it listens. The
// database URL goes in the child's environment (DATABASE_URL), never on
// its command line, where every local user could read it. The child dies
// with this process.
func StartServe(ctx context.Context, binary, dbURL string, args ...string) (*ServeProcess, error) {
	all := append([]string{"serve", "--in-place", "--addr", "127.0.0.1:0"}, args...)
	cmd := exec.CommandContext(ctx, binary, all...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	p := &ServeProcess{cmd: cmd, stderr: &tailBuffer{}}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := procs.Start(cmd, procs.Kill); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "bank is serving on ") {
		p.Kill()
		why := strings.TrimSpace(p.stderr.String())
		if why == "" {
			why = fmt.Sprintf("it printed %q (%v)", line, err)
		}
		return p, fmt.Errorf("bank serve did not start: %s", why)
	}
	p.URL = strings.Fields(strings.TrimPrefix(line, "bank is serving on "))[0]
	go io.Copy(io.Discard, out)
	return p, nil
}

// Kill ends the process at once, as a crash would (SIGKILL).
func (p *ServeProcess) Kill() error {
	if p.cmd.ProcessState != nil {
		return nil
	}
	p.cmd.Process.Kill()
	p.cmd.Wait()
	return nil
}

// Process is the running server's process, for faults such as a pause.
func (p *ServeProcess) Process() *os.Process { return p.cmd.Process }

// PID is the server's process id.
func (p *ServeProcess) PID() int { return p.cmd.Process.Pid }

// Stop ends the process the way an orderly restart does (SIGTERM).
func (p *ServeProcess) Stop() error {
	if p.cmd.ProcessState != nil {
		return nil
	}
	procs.Terminate(p.cmd.Process)
	return p.cmd.Wait()
}

// tailBuffer keeps the last few kilobytes a process wrote, for the error
// that says why it did not start.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(b)
	if t.buf.Len() > 4096 {
		t.buf.Next(t.buf.Len() - 4096)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
