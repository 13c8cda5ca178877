package procs

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// tokenRole makes the test binary a child that says what its token is:
// whether it counts as an administrator or a power user, which privileges
// it holds, and whether it is in a job object.
const tokenRole = "BANK_PROCS_TEST_TOKEN"

func init() {
	if os.Getenv(tokenRole) == "" {
		return
	}
	fmt.Println(describeToken())
	os.Exit(0)
}

func describeToken() string {
	var out []string
	for _, kind := range []windows.WELL_KNOWN_SID_TYPE{windows.WinBuiltinAdministratorsSid, windows.WinBuiltinPowerUsersSid} {
		sid, _ := windows.CreateWellKnownSid(kind)
		member, err := windows.Token(0).IsMember(sid)
		out = append(out, fmt.Sprintf("%s member=%v err=%v", sid, member, err))
	}
	buf, err := tokenInfo(windows.GetCurrentProcessToken(), windows.TokenPrivileges)
	if err != nil {
		return "privileges: " + err.Error()
	}
	for _, p := range (*windows.Tokenprivileges)(unsafe.Pointer(&buf[0])).AllPrivileges() {
		out = append(out, "privilege "+privilegeName(p.Luid))
	}
	var inJob int32
	r, _, err := windows.NewLazySystemDLL("kernel32.dll").NewProc("IsProcessInJob").Call(uintptr(windows.CurrentProcess()), 0, uintptr(unsafe.Pointer(&inJob)))
	out = append(out, fmt.Sprintf("in a job=%v (%v)", r != 0 && inJob != 0, err))
	return strings.Join(out, "\n")
}

func privilegeName(luid windows.LUID) string {
	buf := make([]uint16, 256)
	n := uint32(len(buf))
	r, _, _ := windows.NewLazySystemDLL("advapi32.dll").NewProc("LookupPrivilegeNameW").Call(0,
		uintptr(unsafe.Pointer(&luid)), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)))
	if r == 0 {
		return fmt.Sprintf("%v", luid)
	}
	return windows.UTF16ToString(buf[:n])
}

// TestRestrictedChild: a Restricted child counts as neither an
// administrator nor a power user, holds no privilege but the two pg_ctl
// keeps, and is in a job object (the lab's, so that it dies with the
// lab), whoever the lab runs as. Run under wine, whose user is an
// administrator, by .ci/windows.
func TestRestrictedChild(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the test itself: %s", strings.ReplaceAll(describeToken(), "\n", "; "))
	var out strings.Builder
	spec := Spec{Path: self, Env: []string{tokenRole + "=1"}, Restricted: true, Stdout: &out}
	if err := spec.Run(context.Background()); err != nil {
		t.Fatalf("%v: %s", err, spec.Output)
	}
	got := out.String()
	t.Logf("the restricted child:\n%s", got)
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "privilege "):
			if name := strings.TrimPrefix(line, "privilege "); name != "SeChangeNotifyPrivilege" && name != "SeLockMemoryPrivilege" {
				t.Errorf("the child holds %s", name)
			}
		case strings.Contains(line, "member="):
			if !strings.Contains(line, "member=false err=<nil>") {
				t.Errorf("the child is still a member: %s", line)
			}
		case strings.HasPrefix(line, "in a job="):
			if !strings.HasPrefix(line, "in a job=true") {
				t.Errorf("the child is in no job object: %s", line)
			}
		default:
			t.Errorf("the child said %q", line)
		}
	}
	if !strings.Contains(got, "in a job=") {
		t.Errorf("the child did not say whether it is in a job")
	}
}
