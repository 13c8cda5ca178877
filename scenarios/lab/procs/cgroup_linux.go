package procs

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Where the lab may make cgroups (cgroup v2: as root, or in a subtree
// delegated to the user, as systemd does for a user's own services), a
// Group's keeper and all it starts go in a cgroup of their own, made
// under the lab's. No process can leave it unless it may write to
// another cgroup (setsid, fork, exec, a cleared environment change
// nothing), and writing 1 to its cgroup.kill kills every process in it.
// It holds what the keeper cannot: should the program kill its keeper,
// the cgroup still has every process, and the lab, or its watchdog when
// the lab has died too, kills them and removes it.
var cgroups struct {
	once   sync.Once
	parent string      // the lab's own cgroup's directory ("": not found)
	none   atomic.Bool // making one failed here: the lab may not
}

// newCgroup makes a cgroup for a Group, told to the watchdog, or returns
// "" where the lab may make none.
func newCgroup() string {
	cgroups.once.Do(func() { cgroups.parent = ownCgroup() })
	if cgroups.parent == "" || cgroups.none.Load() {
		return ""
	}
	dir := filepath.Join(cgroups.parent, fmt.Sprintf("bank-%d-%s", os.Getpid(), randomHex(4)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		cgroups.none.Store(true)
		return ""
	}
	_, err := os.Stat(filepath.Join(dir, "cgroup.kill")) // Linux 5.14 and later
	if err == nil {
		err = tell("cgroup %s", dir)
	}
	if err != nil {
		syscall.Rmdir(dir)
		cgroups.none.Store(true)
		return ""
	}
	return dir
}

// ownCgroup is the directory of the lab's own cgroup v2: its path in
// /proc/self/cgroup ("0::/PATH"), under where cgroup2 is mounted.
func ownCgroup() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	own := ""
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
		}
	}
	if !strings.HasPrefix(own, "/") {
		return ""
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	unescape := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	for _, line := range strings.Split(string(mounts), "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - TYPE SOURCE ...
		before, after, ok := strings.Cut(line, " - ")
		f := strings.Fields(before)
		if !ok || len(f) < 5 || !strings.HasPrefix(after, "cgroup2 ") {
			continue
		}
		root, mountpoint := unescape.Replace(f[3]), unescape.Replace(f[4])
		rel := own
		if root != "/" {
			if own != root && !strings.HasPrefix(own, root+"/") {
				continue
			}
			rel = own[len(root):]
		}
		dir := filepath.Join(mountpoint, rel)
		if strings.ContainsAny(dir, " \t\n\\") { // the watchdog reads words
			return ""
		}
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir
		}
	}
	return ""
}

// removeCgroup kills whatever is still in the cgroup and removes it. One
// that will not go is left to the watchdog, which tries again when the
// lab ends.
func removeCgroup(dir string) {
	if dir == "" {
		return
	}
	for try := 0; ; try++ {
		os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		err := syscall.Rmdir(dir)
		if err == nil || err == syscall.ENOENT {
			forget("uncgroup %s", dir)
			return
		}
		if try == 200 {
			return
		}
		time.Sleep(10 * time.Millisecond) // the killed are not gone at once
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
