package procs

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

var job struct {
	once sync.Once
	h    windows.Handle
	err  error
}

// bind puts the lab itself into a job object that kills its members when
// the last handle to it closes; children inherit the membership. Without
// one no child is started: it could outlive the lab.
func bind(*exec.Cmd, OnParentDeath) (release func(), err error) {
	job.once.Do(func() {
		h, err := windows.CreateJobObject(nil, nil)
		if err != nil {
			job.err = err
			return
		}
		info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
		info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
		if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
			uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
			windows.CloseHandle(h)
			job.err = err
			return
		}
		if err := windows.AssignProcessToJobObject(h, windows.CurrentProcess()); err != nil {
			windows.CloseHandle(h)
			job.err = err
			return
		}
		job.h = h // kept open for the life of the lab
	})
	if job.err != nil {
		return nil, fmt.Errorf("the job object that ends the lab's children with it: %w", job.err)
	}
	return func() {}, nil
}

func started(*exec.Cmd, OnParentDeath) error { return nil }

func reaped(*exec.Cmd) {}

var errNoSignals = errors.New("pausing a process is not supported on Windows")

// runAs: there are no other accounts to run as here.
func runAs(_ *exec.Cmd, a *Account) error {
	if a != nil {
		return errors.New("running a child as another account is not supported on Windows")
	}
	return nil
}

// Running reports whether pid is a live process.
func Running(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	if windows.GetExitCodeProcess(h, &code) != nil {
		return false
	}
	return code == 259 // STILL_ACTIVE
}
