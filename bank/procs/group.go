package procs

import (
	"crypto/rand"
	"encoding/hex"
)

// markPrefix names the variable that marks a group's processes: one per
// group, so that a group started inside another carries both marks.
const markPrefix = "BANK_GROUP_"

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
