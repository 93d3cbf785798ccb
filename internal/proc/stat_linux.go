package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// startUnit is what a Stat's Start counts, for the record's header.
const startUnit = "clock ticks after boot"

// ReadStat reads the stat of process pid. A pid that no process has gives
// an error that satisfies errors.Is(err, fs.ErrNotExist).
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	st, err := parseStat(b)
	if err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// parseStat parses a line of /proc/PID/stat. The command name (field 2)
// is in parentheses and may hold spaces and parentheses itself, so the
// fields after it are found from the last ')'.
func parseStat(b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return Stat{}, errors.New("no command name in parentheses")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return Stat{}, fmt.Errorf("pid: %w", err)
	}
	f := strings.Fields(string(b[end+1:])) // f[0] is field 3
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("%d fields after the command name, want at least 20", len(f))
	}
	st := Stat{Pid: pid, Comm: string(b[open+1 : end]), State: f[0][0]}
	var err1, err2, err3, err4 error
	st.PPid, err1 = strconv.Atoi(f[1])
	st.Pgid, err2 = strconv.Atoi(f[2])
	st.Sid, err3 = strconv.Atoi(f[3])
	st.Start, err4 = strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return Stat{}, err
	}
	return st, nil
}

// Scan reads the stat of every process. A process that ends during the
// scan is left out.
func Scan() ([]Stat, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	procs := make([]Stat, 0, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue // not a process: /proc/self, /proc/meminfo...
		}
		if st, err := ReadStat(pid); err == nil {
			procs = append(procs, st)
		}
	}
	return procs, nil
}
