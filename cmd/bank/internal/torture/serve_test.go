package torture

import "testing"

// TestTortureReplicasGetTheirOwnSeeds: each replica's arguments are its
// own (appending to a shared slice once gave every replica the last one's
// seed).
func TestTortureReplicasGetTheirOwnSeeds(t *testing.T) {
	t.Parallel()
	args := make([]string, 2, 16) // room to append in place, as flags leave it
	copy(args, []string{"--lock-ttl", "1s"})
	a := replicaArgs(args, 1, 0)
	b := replicaArgs(args, 1, 1)
	if a[len(a)-1] == b[len(b)-1] {
		t.Fatalf("two replicas got the same seed: %v and %v", a, b)
	}
}
