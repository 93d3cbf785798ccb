package commands

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpgen/mcpgen/internal/proc"
)

// killHolders kills every process but this one that holds the write end of
// one of the pipes whose read ends are outputs, with the descendants of
// each: what a tool started and what left its process group keeping the
// tool's output open (setsid), which would keep the call from answering.
// Only the write end counts: a child of this process caught between fork
// and exec holds copies of our read ends, not of a run's write ends, which
// Run closed right after the start.
//
// A holder that forks while it is being killed can leave a new holder; a
// few rounds catch those, and Run stops waiting after that in any case. A
// pid that dies and is reused between the look and the kill would take the
// kill: with pid numbers wrapping at pid_max, not a worry in practice.
func killHolders(outputs []*os.File) {
	pipes := make(map[string]bool)
	for _, f := range outputs {
		fi, err := f.Stat()
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			pipes["pipe:["+strconv.FormatUint(st.Ino, 10)+"]"] = true
		}
	}
	self := os.Getpid()
	for round := range 3 {
		if round > 0 {
			time.Sleep(10 * time.Millisecond) // let the killed ones go
		}
		parents := processes()
		var doomed []int
		for pid := range parents {
			if pid != self && holds(pid, pipes) {
				doomed = append(doomed, pid)
			}
		}
		if len(doomed) == 0 {
			return
		}
		// Their descendants too, found before any of them dies and its
		// children move to another parent.
		children := make(map[int][]int)
		for pid, ppid := range parents {
			children[ppid] = append(children[ppid], pid)
		}
		for i := 0; i < len(doomed); i++ {
			for _, c := range children[doomed[i]] {
				if c != self {
					doomed = append(doomed, c)
				}
			}
		}
		for _, pid := range doomed {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// processes returns the parent of every process.
func processes() map[int]int {
	procs, err := proc.Procs()
	if err != nil {
		return nil
	}
	parents := make(map[int]int, len(procs))
	for _, p := range procs {
		parents[p.Pid] = p.PPid
	}
	return parents
}

// holds reports whether process pid has one of pipes open for writing.
func holds(pid int, pipes map[string]bool) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	fds, err := os.ReadDir(dir + "/fd")
	if err != nil {
		return false // gone, or not ours to see
	}
	for _, fd := range fds {
		target, err := os.Readlink(dir + "/fd/" + fd.Name())
		if err != nil || !pipes[target] {
			continue
		}
		if writable(dir + "/fdinfo/" + fd.Name()) {
			return true
		}
	}
	return false
}

// writable reports whether the descriptor that fdinfo describes was opened
// for writing.
func writable(fdinfo string) bool {
	data, err := os.ReadFile(fdinfo)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&syscall.O_ACCMODE != syscall.O_RDONLY
		}
	}
	return false
}
