//go:build unix && !linux

package procs

// Without /proc there is no way to look at a process's threads, and the
// kernel's report to the parent (wait4 with WUNTRACED) would also reap a
// child that has exited, under the feet of the goroutine that waits for
// it. So the signal is trusted: on macOS the kernel suspends the whole
// task while it delivers SIGSTOP.
func processStopped(int) bool { return true }

func groupStopped(int) bool { return true }
