package dirs

import (
	"fmt"
	"strings"
)

// Windows has no modes: a directory is private when its access control list
// says so. The check is here, on security identifiers as strings, so that
// tests on any system can run it; rundir_windows.go reads the list.

// An aclEntry is one entry of a directory's access control list.
type aclEntry struct {
	allow bool   // an access-allowed entry; else a deny entry (or one we do not read, when sid is empty)
	sid   string // the trustee, as S-1-5-...
}

// Trustees that may hold access to a private directory besides its user:
// the system itself, and administrators, who can take any file anyway.
const (
	sidSystem         = "S-1-5-18"
	sidAdministrators = "S-1-5-32-544"
)

// checkPrivateACL checks that dir, owned by owner and guarded by dacl
// (nil: no list at all, which lets everyone in), lets in no one but user
// (and the trustees above). Deny entries only take access away. An entry
// of a kind it does not read (an object or callback entry) is refused, to
// be safe.
func checkPrivateACL(dir, owner, user string, dacl []aclEntry, hasDACL bool) error {
	const fix = "remove it (mcpgen makes it again, private), or set " + EnvRuntimeDir + " to a directory of your own"
	if owner != user {
		return fmt.Errorf("%s: owned by %s, not by you (%s), so another user may control what it holds: %s", dir, owner, user, fix)
	}
	if !hasDACL {
		return fmt.Errorf("%s: has no access control list, which lets everyone in: %s", dir, fix)
	}
	var others []string
	for _, e := range dacl {
		switch {
		case e.sid == "":
			return fmt.Errorf("%s: its access control list has an entry mcpgen cannot read: %s", dir, fix)
		case !e.allow, e.sid == user, e.sid == sidSystem, e.sid == sidAdministrators:
		default:
			others = append(others, e.sid)
		}
	}
	if len(others) > 0 {
		return fmt.Errorf("%s: lets %s in, not only you: %s", dir, strings.Join(others, ", "), fix)
	}
	return nil
}

// privateSDDL is the security descriptor of a directory mcpgen makes
// private on Windows: owned by user, with a protected list (nothing
// inherited from above) that grants user full control, inherited by what
// is made inside.
func privateSDDL(user string) string {
	return "O:" + user + "D:P(A;OICI;FA;;;" + user + ")"
}
