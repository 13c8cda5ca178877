package procs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// group is what holds a Group's processes on Linux: its keeper (see
// keeper_linux.go), and a cgroup where the lab may make one (see
// cgroup_linux.go).
type group struct {
	pid    atomic.Int64 // the program's, once the keeper has said it
	lab    *os.File     // the lab's end of the keeper's pipe
	closed sync.Once
	cgroup string // "" where the lab may make none
}

func (g *group) leader() int { return int(g.pid.Load()) }

// end closes the lab's end of the pipe: the keeper kills everything and
// exits.
func (g *group) end() { g.closed.Do(func() { g.lab.Close() }) }

// kill kills the program's process group now, and has the keeper kill the
// rest (what left the group).
func (g *group) kill() error {
	var err error
	if pid := g.leader(); pid > 0 {
		if err = syscall.Kill(-pid, syscall.SIGKILL); err == syscall.ESRCH {
			err = nil
		}
	}
	g.end()
	return err
}

// startGroup starts the command through a keeper, and returns once the
// keeper has started it (and said its process id).
func (c *Child) startGroup(how OnParentDeath) error {
	cmd := c.cmd
	fromLab, lab, err := os.Pipe()
	if err != nil {
		return err
	}
	reports, report, err := os.Pipe()
	if err != nil {
		fromLab.Close()
		lab.Close()
		return err
	}
	defer reports.Close()
	g := &group{lab: lab, cgroup: newCgroup()}
	cgroup, account := g.cgroup, "-"
	if cgroup == "" {
		cgroup = "-"
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cr := cmd.SysProcAttr.Credential; cr != nil { // for the program, not the keeper
		account = fmt.Sprintf("%d:%d", cr.Uid, cr.Gid)
		cmd.SysProcAttr.Credential = nil
	}
	// A process group of its own: not the program's, which the lab
	// pauses, nor the lab's, to which a terminal sends Ctrl-C.
	cmd.SysProcAttr.Setpgid = true
	cmd.Args = append([]string{keeperName, signalName(how), strconv.FormatInt(c.grace.Milliseconds(), 10), cgroup, account, cmd.Path}, cmd.Args...)
	cmd.Path = keeperPath
	cmd.ExtraFiles = []*os.File{fromLab, report} // 3 and 4
	cmd.Cancel = g.kill                          // the context ended: all of them go
	// WaitDelay is the program's, not the keeper's: once the context
	// ends, the keeper has up to the grace and its own 10 s to kill what
	// is left, and must not be killed before it has (on a busy machine
	// that took more than a second, and the escapes outlived it).
	if cmd.WaitDelay > 0 {
		cmd.WaitDelay += c.grace + keeperGiveUp + time.Second
	}
	err = cmd.Start()
	fromLab.Close()
	report.Close()
	if err != nil {
		g.end()
		removeCgroup(g.cgroup)
		return fmt.Errorf("the keeper of its processes could not start: %w", err)
	}
	line, _ := bufio.NewReader(reports).ReadString('\n')
	line = strings.TrimSpace(line)
	if pid, ok := strings.CutPrefix(line, "ok "); ok {
		if n, err := strconv.Atoi(pid); err == nil {
			g.pid.Store(int64(n))
			c.group = g
			return nil
		}
	}
	// The keeper could not start the program, and exits.
	g.end()
	werr := cmd.Wait()
	removeCgroup(g.cgroup)
	if why, ok := strings.CutPrefix(line, "error "); ok {
		return errors.New(why)
	}
	return fmt.Errorf("the keeper of its processes ended (%v) before it started it", werr)
}

func (c *Child) killGroup() error { return c.group.kill() }

// groupEnded: the keeper has exited, so the program and all it started
// are gone; its cgroup goes too (emptied first, should the keeper have
// been killed before it could do its work).
func (c *Child) groupEnded() {
	c.group.end()
	removeCgroup(c.group.cgroup)
}
