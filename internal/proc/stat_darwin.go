package proc

import (
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"
)

// startUnit is what a Proc's Start counts, for the record's header: the
// kernel's p_starttime, a wall-clock time taken when the process forked.
const startUnit = "microseconds since 1970"

// ReadProc reads what sysctl kern.proc.pid says of process pid. A pid that
// no process has gives an error that satisfies errors.Is(err,
// fs.ErrNotExist).
func ReadProc(pid int) (Proc, error) {
	kp, err := unix.SysctlKinfoProcSlice("kern.proc.pid", pid)
	if err != nil {
		return Proc{}, fmt.Errorf("sysctl kern.proc.pid.%d: %w", pid, err)
	}
	if len(kp) == 0 {
		return Proc{}, fmt.Errorf("process %d: %w", pid, fs.ErrNotExist)
	}
	return statOf(&kp[0]), nil
}

// Scan reads what sysctl kern.proc.all says of every process. A process
// that ends during the scan may be left out.
func Procs() ([]Proc, error) {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, fmt.Errorf("list processes: sysctl kern.proc.all: %w", err)
	}
	procs := make([]Proc, 0, len(kps))
	for i := range kps {
		if kps[i].Proc.P_pid == 0 {
			continue // the kernel
		}
		procs = append(procs, statOf(&kps[i]))
	}
	return procs, nil
}

// Process states of <sys/proc.h>.
const (
	sidl   = 1 // being created by fork
	srun   = 2
	ssleep = 3
	sstop  = 4
	szomb  = 5 // exited, not yet waited for
)

// statOf turns a kinfo_proc into a Proc, with the letters Linux uses for
// the states. kinfo_proc has no session id, only a kernel address, so the
// session comes from getsid(2); a process that has just died has none,
// and gets -1, which matches no recorded session.
func statOf(kp *unix.KinfoProc) Proc {
	p := &kp.Proc
	st := Proc{
		Pid:   int(p.P_pid),
		PPid:  int(kp.Eproc.Ppid),
		Pgid:  int(kp.Eproc.Pgid),
		Start: uint64(p.P_starttime.Sec)*1e6 + uint64(p.P_starttime.Usec),
		Sid:   -1,
	}
	switch p.P_stat {
	case sidl:
		st.State = 'I'
	case srun:
		st.State = 'R'
	case ssleep:
		st.State = 'S'
	case sstop:
		st.State = 'T'
	case szomb:
		st.State = 'Z'
	default:
		st.State = '?'
	}
	if sid, err := unix.Getsid(st.Pid); err == nil {
		st.Sid = sid
	}
	return st
}
