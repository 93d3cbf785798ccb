package dirs

import (
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// TestRuntimeDirPrivate makes a runtime dir and reads its access control
// list back: owned by this user, who alone is let in, but for the system
// and administrators (Wine adds the system to what it is given).
func TestRuntimeDirPrivate(t *testing.T) {
	clearDirEnv(t)
	t.Setenv(EnvRuntimeDir, t.TempDir())
	dir, err := RuntimeDir("ws")
	if err != nil {
		t.Fatal(err)
	}
	user, err := currentUserSID()
	if err != nil {
		t.Fatal(err)
	}
	owner, dacl, hasDACL, err := readACL(dir)
	if err != nil {
		t.Fatal(err)
	}
	if owner != user || !hasDACL || len(dacl) == 0 {
		t.Fatalf("%s: owner %s, list %v (%v); want owner %s and a list", dir, owner, dacl, hasDACL, user)
	}
	for _, e := range dacl {
		if e.allow && e.sid != user && e.sid != sidSystem && e.sid != sidAdministrators {
			t.Errorf("%s lets %s in (list %v): want only %s", dir, e.sid, dacl, user)
		}
	}
	if again, err := RuntimeDir("ws"); err != nil || again != dir {
		t.Errorf("second RuntimeDir = %q, %v; want %q", again, err, dir)
	}
}

// TestRuntimeDirRefusesOpen plants a workspace dir that everyone may
// enter: RuntimeDir refuses it rather than use it.
func TestRuntimeDirRefusesOpen(t *testing.T) {
	clearDirEnv(t)
	base := t.TempDir()
	t.Setenv(EnvRuntimeDir, base)
	user, err := currentUserSID()
	if err != nil {
		t.Fatal(err)
	}
	sd, err := windows.SecurityDescriptorFromString("O:" + user + "D:P(A;OICI;FA;;;" + user + ")(A;OICI;FA;;;WD)")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := windows.UTF16PtrFromString(filepath.Join(base, "ws"))
	sa := &windows.SecurityAttributes{SecurityDescriptor: sd}
	sa.Length = uint32(unsafe.Sizeof(*sa))
	if err := windows.CreateDirectory(p, sa); err != nil {
		t.Fatal(err)
	}
	_, err = RuntimeDir("ws")
	if err == nil || !strings.Contains(err.Error(), "lets S-1-1-0 in, not only you") {
		t.Errorf("RuntimeDir of a dir open to everyone: %v, want a refusal that names S-1-1-0", err)
	}
}
