package client

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
)

// NewKey makes the idempotency key of one intent: a random UUID (version
// 4), from crypto/rand. Make it once, when the intent is made (as the app's
// confirm screen opens), keep it with the intent, and send it on every
// attempt at that intent: never one per attempt.
func NewKey() string { return NewKeyFrom(rand.New(cryptoSource{})) }

// NewKeyFrom is NewKey drawn from r: for a run that must print the same
// keys every time, such as a lesson with a seeded source. Never seed it
// the same way twice against one server: equal keys are one intent to it.
func NewKeyFrom(r *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff,
		r.Uint32()&0xfff, 0x8000|r.Uint32()&0x3fff, r.Uint64()&0xffffffffffff)
}

// cryptoSource is crypto/rand as a math/rand source.
type cryptoSource struct{}

func (cryptoSource) Uint64() uint64 {
	var b [8]byte
	crand.Read(b[:]) // never fails (Go 1.24 and later)
	return binary.LittleEndian.Uint64(b[:])
}
