package launcher

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// xucredVersion is XUCRED_VERSION of <sys/ucred.h>: the layout of struct
// xucred that unix.Xucred mirrors.
const xucredVersion = 0

// checkPeer accepts only processes of this user: the runtime dir is
// private already (0700), and this holds even if someone loosened it. The
// peer's credentials are LOCAL_PEERCRED's, taken by the kernel when it
// connected.
func checkPeer(conn net.Conn) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return errors.New("not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Xucred
	var pid int
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		// The pid only names the peer in the error.
		pid, _ = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return credErr
	}
	if cred.Version != xucredVersion {
		return fmt.Errorf("peer pid %d: credentials of version %d, want %d", pid, cred.Version, xucredVersion)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("peer pid %d runs as uid %d, not %d", pid, cred.Uid, os.Getuid())
	}
	return nil
}
