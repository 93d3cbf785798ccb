package dirs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// makePrivateDir makes dir private to this user unless it exists: owned by
// the user, with a protected access control list that grants the user
// alone (privateSDDL). Then it checks it (CheckPrivateDir).
func makePrivateDir(dir string) error {
	user, err := currentUserSID()
	if err != nil {
		return fmt.Errorf("runtime dir: %w", err)
	}
	if err := createPrivateDir(dir, user); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("runtime dir: %w", err)
	}
	return CheckPrivateDir(dir)
}

// PrivateSocket has nothing to do: the socket inherits its directory's
// access control list, which lets only the user in (Windows modes only
// set or clear the read-only attribute).
func PrivateSocket(string) error { return nil }

// CheckPrivateDir checks that dir is a directory, not a link or a junction,
// that only this user can enter (checkPrivateACL); an error that wraps
// fs.ErrNotExist when it does not exist.
func CheckPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("runtime dir: %w", err)
	}
	if fi.Mode().Type() != fs.ModeDir {
		return fmt.Errorf("%s: not a plain directory (a file, a link or a junction): remove it, or set %s to a directory of your own", dir, EnvRuntimeDir)
	}
	user, err := currentUserSID()
	if err != nil {
		return fmt.Errorf("runtime dir: %w", err)
	}
	owner, dacl, hasDACL, err := readACL(dir)
	if err != nil {
		return fmt.Errorf("runtime dir: %s: %w", dir, err)
	}
	return checkPrivateACL(dir, owner, user, dacl, hasDACL)
}

func currentUserSID() (string, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("who is this user: %w", err)
	}
	return u.User.Sid.String(), nil
}

func createPrivateDir(dir, user string) error {
	sd, err := windows.SecurityDescriptorFromString(privateSDDL(user))
	if err != nil {
		return err
	}
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return err
	}
	sa := &windows.SecurityAttributes{SecurityDescriptor: sd}
	sa.Length = uint32(unsafe.Sizeof(*sa))
	if err := windows.CreateDirectory(p, sa); err != nil {
		return &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	return nil
}

// readACL reads dir's owner and access control list.
func readACL(dir string) (owner string, dacl []aclEntry, hasDACL bool, err error) {
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return "", nil, false, err
	}
	o, _, err := sd.Owner()
	if err != nil {
		return "", nil, false, err
	}
	acl, _, err := sd.DACL()
	if err != nil && !errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND) {
		return "", nil, false, err
	}
	if acl == nil {
		return o.String(), nil, false, nil
	}
	for i := range uint32(acl.AceCount) {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(acl, i, &ace); err != nil {
			return "", nil, false, err
		}
		var e aclEntry
		switch ace.Header.AceType {
		case windows.ACCESS_ALLOWED_ACE_TYPE:
			e = aclEntry{allow: true, sid: (*windows.SID)(unsafe.Pointer(&ace.SidStart)).String()}
		case windows.ACCESS_DENIED_ACE_TYPE:
			e = aclEntry{allow: false, sid: (*windows.SID)(unsafe.Pointer(&ace.SidStart)).String()}
		}
		dacl = append(dacl, e)
	}
	return o.String(), dacl, true, nil
}
