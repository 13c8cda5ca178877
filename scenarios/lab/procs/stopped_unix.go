//go:build unix && !linux && !darwin

package procs

// Without /proc there is no way to look at a process's threads, and the
// kernel's report to the parent (wait4 with WUNTRACED) would also reap a
// child that has exited, under the feet of the goroutine that waits for
// it. So on the other Unix systems the signal is trusted; macOS asks the
// kernel (stopped_darwin.go).
func processStopped(int) bool { return true }

func groupStopped(int) bool { return true }
