package procs

import (
	"fmt"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// CreateRestrictedToken is not in golang.org/x/sys/windows.
var procCreateRestrictedToken = windows.NewLazySystemDLL("advapi32.dll").NewProc("CreateRestrictedToken")

// restrict makes cmd start with a restricted copy of the lab's own token,
// the one pg_ctl gives PostgreSQL (CreateRestrictedProcess in its
// pg_ctl.c): the Administrators and Power Users groups kept for denying
// access only, every privilege removed but SeChangeNotifyPrivilege
// (walking directories) and SeLockMemoryPrivilege (large pages), and the
// user added to the token's default DACL, or the objects the child makes
// (its pipes, its own children) would be closed to it. PostgreSQL refuses
// to run with administrative permissions, which an elevated terminal, the
// built-in Administrator and many CI runners have.
//
// The child is started with CreateProcessAsUser (SysProcAttr.Token),
// which needs no privilege for a restricted copy of the caller's own
// token. It is still created inside the lab's job object, so it dies with
// the lab as every other child does. The token is closed once the child
// has started (see closeToken).
func restrict(cmd *exec.Cmd) error {
	var own windows.Token
	access := uint32(windows.TOKEN_QUERY | windows.TOKEN_DUPLICATE | windows.TOKEN_ASSIGN_PRIMARY | windows.TOKEN_ADJUST_DEFAULT)
	if err := windows.OpenProcessToken(windows.CurrentProcess(), access, &own); err != nil {
		return fmt.Errorf("a restricted token: opening the lab's own: %w", err)
	}
	defer own.Close()
	var disable []windows.SIDAndAttributes
	for _, kind := range []windows.WELL_KNOWN_SID_TYPE{windows.WinBuiltinAdministratorsSid, windows.WinBuiltinPowerUsersSid} {
		sid, err := windows.CreateWellKnownSid(kind)
		if err != nil {
			return fmt.Errorf("a restricted token: %w", err)
		}
		disable = append(disable, windows.SIDAndAttributes{Sid: sid})
	}
	remove, err := privilegesToRemove(own)
	if err != nil {
		return fmt.Errorf("a restricted token: its privileges: %w", err)
	}
	var restricted windows.Token
	r, _, err := procCreateRestrictedToken.Call(uintptr(own), 0,
		uintptr(len(disable)), uintptr(unsafe.Pointer(&disable[0])),
		uintptr(len(remove)), sliceAddr(remove),
		0, 0, uintptr(unsafe.Pointer(&restricted)))
	if r == 0 {
		return fmt.Errorf("a restricted token: CreateRestrictedToken: %w", err)
	}
	if err := addUserToDefaultDACL(restricted); err != nil {
		restricted.Close()
		return fmt.Errorf("a restricted token: its default DACL: %w", err)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Token = syscall.Token(restricted)
	return nil
}

// privilegesToRemove is every privilege the token holds but the two that
// pg_ctl keeps.
func privilegesToRemove(t windows.Token) ([]windows.LUIDAndAttributes, error) {
	var keep []windows.LUID
	for _, name := range []string{"SeChangeNotifyPrivilege", "SeLockMemoryPrivilege"} {
		var luid windows.LUID
		if err := windows.LookupPrivilegeValue(nil, windows.StringToUTF16Ptr(name), &luid); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		keep = append(keep, luid)
	}
	buf, err := tokenInfo(t, windows.TokenPrivileges)
	if err != nil {
		return nil, err
	}
	var remove []windows.LUIDAndAttributes
next:
	for _, p := range (*windows.Tokenprivileges)(unsafe.Pointer(&buf[0])).AllPrivileges() {
		for _, k := range keep {
			if p.Luid == k {
				continue next
			}
		}
		remove = append(remove, windows.LUIDAndAttributes{Luid: p.Luid})
	}
	return remove, nil
}

// tokenDefaultDACL is TOKEN_DEFAULT_DACL.
type tokenDefaultDACL struct{ dacl *windows.ACL }

// addUserToDefaultDACL grants the token's user full access in its default
// DACL, as PostgreSQL's AddUserToTokenDacl does: an administrator's
// default DACL names only Administrators and SYSTEM, and the first of
// those no longer opens anything for the restricted token.
func addUserToDefaultDACL(t windows.Token) error {
	user, err := t.GetTokenUser()
	if err != nil {
		return err
	}
	buf, err := tokenInfo(t, windows.TokenDefaultDacl)
	if err != nil {
		return err
	}
	old := (*tokenDefaultDACL)(unsafe.Pointer(&buf[0])).dacl
	acl, err := windows.ACLFromEntries([]windows.EXPLICIT_ACCESS{{
		AccessPermissions: windows.GENERIC_ALL,
		AccessMode:        windows.GRANT_ACCESS,
		Trustee: windows.TRUSTEE{TrusteeForm: windows.TRUSTEE_IS_SID, TrusteeType: windows.TRUSTEE_IS_USER,
			TrusteeValue: windows.TrusteeValueFromSID(user.User.Sid)},
	}}, old)
	if err != nil {
		return err
	}
	info := tokenDefaultDACL{acl}
	return windows.SetTokenInformation(t, windows.TokenDefaultDacl, (*byte)(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
}

// tokenInfo is GetTokenInformation into a buffer of the size it asks for.
func tokenInfo(t windows.Token, class uint32) ([]byte, error) {
	n := uint32(64)
	for {
		buf := make([]byte, n)
		err := windows.GetTokenInformation(t, class, &buf[0], n, &n)
		if err == nil {
			return buf, nil
		}
		if err != windows.ERROR_INSUFFICIENT_BUFFER || n <= uint32(len(buf)) {
			return nil, err
		}
	}
}

func sliceAddr(s []windows.LUIDAndAttributes) uintptr {
	if len(s) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&s[0]))
}

// closeToken closes the restricted token restrict made, once the child
// has been created with it (or could not be).
func closeToken(cmd *exec.Cmd) {
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Token != 0 {
		syscall.CloseHandle(syscall.Handle(cmd.SysProcAttr.Token))
		cmd.SysProcAttr.Token = 0
	}
}
