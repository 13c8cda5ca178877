//go:build !linux

package pgserver

// freeBytes: slots live in memory on Linux only, so no other system asks.
func freeBytes(string) (uint64, bool) { return 0, false }
