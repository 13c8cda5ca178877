//go:build !linux

package pgserver

// machine is uname -m where the library asks for it: only on Linux.
func machine() string { return "" }
