package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpgen/mcpgen/internal/statefile"
)

// The record's file in a runtime dir, and the one that mcpgen wrote before
// containers (process groups only: "PID START SID" lines), which is still
// read so that a launcher killed before an upgrade is swept after it.
const (
	recordFile       = "contained"
	legacyRecordFile = "pgids"
)

// maxRecord bounds the record that ReadRecord reads: far more than the
// lines of the thousands of servers a launcher may hold (each a few dozen
// bytes), far less than what would hurt to read.
const maxRecord = 16 << 20

// recordHeader opens the record for whoever reads it.
const recordHeader = "# mcpgen: what this launcher's servers run in, for the next launch to end if it dies (cgroup INODE PATH, proc PID START)\n"

// A Record is a runtime dir's list of what a launcher's containers hold,
// as Entry lines: a launcher killed with SIGKILL cannot stop its servers,
// and the next launch of the workspace reads the record (ReadRecord) and
// ends what it names (Sweep) before it starts anything.
//
// A Record is attached to one Containment (NewRecord) and follows it:
// every container records its entries as its first process starts, before
// Start returns, and a container whose entries cannot be recorded starts
// nothing (Container.Start kills what it started and fails). Refresh
// records what has changed since (in ModeSubreaper, processes that the
// started ones started).
//
// The file only grows while the launcher runs: a new entry is appended in
// one write, and a container that is closed leaves its lines in place
// (naming processes that are gone, which Sweep recognizes by their start
// times) until they outnumber the live ones, when the file is rewritten
// atomically (a temporary file renamed over it). Starting n servers costs
// O(n) writes, not O(n²); a launcher killed at any moment leaves a file
// that names at least every live entry, at worst with a torn last line.
// It is safe for concurrent use.
type Record struct {
	path string

	mu sync.Mutex
	// keep is what every rewrite keeps: what the sweep could not end,
	// and the containment's own entries (the session cgroup).
	keep []Entry
	// containers holds each container's entries as last recorded.
	containers map[*Container][]Entry
	// written is every entry in the file now; lines counts them.
	written map[Entry]bool
	lines   int
	removed bool
}

// ReadRecord reads the record that a launcher left in runtimeDir, old
// format included: the entries to Sweep. No record is no entry. A line
// that only a bug or a hand could have written is an error that names it:
// the record is no launcher's to guess at.
func ReadRecord(runtimeDir string) ([]Entry, error) {
	var entries []Entry
	for _, name := range []string{recordFile, legacyRecordFile} {
		path := filepath.Join(runtimeDir, name)
		data, err := statefile.ReadFile(path, maxRecord)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("containment record: %w", err)
		}
		es, err := parseRecord(data)
		if err != nil {
			return nil, fmt.Errorf("%s:%w: if no process of an earlier launcher is left, remove the file", path, err)
		}
		entries = append(entries, es...)
	}
	return entries, nil
}

// A recordError is a malformed line of a record.
type recordError struct {
	line int
	text string
}

func (e *recordError) Error() string {
	return fmt.Sprintf("%d: want \"cgroup INODE PATH\" or \"proc PID START\", got %q", e.line, e.text)
}

// parseRecord reads a record's lines: Entry lines, and the old format's
// "PID START SID" lines, which name a process group's leader, read as
// proc entries (Sweep ends a leader's group with its tree).
func parseRecord(data []byte) ([]Entry, error) {
	var entries []Entry
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] >= '0' && line[0] <= '9' {
			f := strings.Fields(line)
			if len(f) != 3 {
				return nil, &recordError{i + 1, line}
			}
			pid, err1 := strconv.Atoi(f[0])
			start, err2 := strconv.ParseUint(f[1], 10, 64)
			sid, err3 := strconv.Atoi(f[2])
			// pid 1 is init, and kill(-1) would reach every process.
			if err1 != nil || err2 != nil || err3 != nil || pid <= 1 || sid < 0 {
				return nil, &recordError{i + 1, line}
			}
			entries = append(entries, Entry{Kind: EntryProc, Proc: ProcID{Pid: pid, Start: start}})
			continue
		}
		e, err := ParseEntry(line)
		if err != nil {
			return nil, &recordError{i + 1, line}
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// NewRecord starts the record of runtimeDir for containment c, replacing
// what an earlier launcher left (call it after Sweep): the file then names
// keep (what the sweep could not end, for the next one to try) and c's own
// entries. From then on every container of c is recorded as it starts.
func NewRecord(runtimeDir string, c *Containment, keep []Entry) (*Record, error) {
	r := &Record{
		path:       filepath.Join(runtimeDir, recordFile),
		keep:       slices.Concat(keep, c.Entries()),
		containers: map[*Container][]Entry{},
	}
	if !c.record.CompareAndSwap(nil, r) {
		return nil, errors.New("containment record: the containment has a record already")
	}
	err := r.rewrite()
	if err == nil {
		if rerr := os.Remove(filepath.Join(runtimeDir, legacyRecordFile)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = fmt.Errorf("containment record: %w", rerr)
		}
	}
	if err != nil {
		c.record.Store(nil)
		return nil, err
	}
	return r, nil
}

// Refresh records the entries that containers have gained since they were
// recorded: call it when the Containment's Changed fires.
func (r *Record) Refresh() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removed {
		return nil
	}
	var fresh []Entry
	for k := range r.containers {
		es := k.Entries()
		r.containers[k] = es
		fresh = append(fresh, es...)
	}
	if err := r.append(fresh); err != nil {
		return err
	}
	// A server that keeps starting short-lived processes adds lines
	// that name the dead: they go here too, not only when it stops.
	return r.compact()
}

// Remove deletes the record's file and stops recording: call it once the
// Containment has closed without error, when nothing it held is left.
func (r *Record) Remove() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed = true
	if err := os.Remove(r.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("containment record: %w", err)
	}
	return nil
}

// add records k's entries, as Container.Start does once k's process has
// started.
func (r *Record) add(k *Container) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removed {
		return errors.New("containment record: removed, the launcher is stopping")
	}
	es := k.Entries()
	if err := r.append(es); err != nil {
		return err
	}
	r.containers[k] = es
	return nil
}

// remove forgets k, as Container.Close does once k's processes are gone;
// its lines stay in the file until the next rewrite.
func (r *Record) remove(k *Container) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.containers[k]; !ok || r.removed {
		return nil
	}
	delete(r.containers, k)
	return r.compact()
}

// compact rewrites the file when the lines that name what is gone are most
// of it: the cost of a rewrite is then paid for by as many appends. Called
// with r.mu held.
func (r *Record) compact() error {
	live := len(r.keep)
	for _, es := range r.containers {
		live += len(es)
	}
	if r.lines > 2*live+64 {
		return r.rewrite()
	}
	return nil
}

// append writes the entries that the file does not hold yet, in one write.
// Called with r.mu held.
func (r *Record) append(es []Entry) error {
	var b []byte
	for _, e := range es {
		if !r.written[e] {
			b = append(b, e.String()+"\n"...)
		}
	}
	if len(b) == 0 {
		return nil
	}
	f, err := statefile.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("containment record: %w", err)
	}
	for _, e := range es {
		if !r.written[e] {
			r.written[e] = true
			r.lines++
		}
	}
	return nil
}

// rewrite replaces the file with the live entries, atomically. Called with
// r.mu held, or before r is shared.
func (r *Record) rewrite() error {
	written := map[Entry]bool{}
	b := []byte(recordHeader)
	add := func(es []Entry) {
		for _, e := range es {
			if !written[e] {
				written[e] = true
				b = append(b, e.String()+"\n"...)
			}
		}
	}
	add(r.keep)
	for _, es := range r.containers {
		add(es)
	}
	f, err := os.CreateTemp(filepath.Dir(r.path), recordFile+".*.tmp") // mode 0600
	if err != nil {
		return fmt.Errorf("containment record: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	// No fsync: the record guards against the launcher's death, not the
	// machine's, and after a reboot its processes are gone anyway.
	if err == nil {
		err = os.Rename(tmp, r.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("containment record: %w", err)
	}
	r.written, r.lines = written, len(written)
	return nil
}
