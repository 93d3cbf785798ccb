package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// recordLines reads the entries of the record in dir, in file order.
func recordLines(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, recordFile))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// A Record names what its containment holds before Start returns, keeps
// what the sweep left and the session cgroup, and replaces the old
// format's file.
func TestRecord(t *testing.T) {
	for _, mode := range []string{"cgroup", "subreaper", "groups"} {
		t.Run(mode, func(t *testing.T) {
			c := setupMode(t, mode)
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, legacyRecordFile), []byte("4242 1 4242\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			kept := Entry{Kind: EntryProc, Proc: ProcID{Pid: 4243, Start: 7}}
			rec, err := NewRecord(dir, c, []Entry{kept})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := NewRecord(dir, c, nil); err == nil {
				t.Errorf("a second record of one containment: got no error")
			}
			if _, err := os.Stat(filepath.Join(dir, legacyRecordFile)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the old format's record: %v, want it removed", err)
			}
			want := []string{kept.String()}
			for _, e := range c.Entries() {
				want = append(want, e.String())
			}
			if got := recordLines(t, dir); !slices.Equal(got, want) {
				t.Errorf("record: got %q, want %q", got, want)
			}
			if fi, err := os.Stat(filepath.Join(dir, recordFile)); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("record: %v, %v; want mode 0600", fi, err)
			}

			k, err := c.New("srv", Limits{})
			if err != nil {
				t.Fatal(err)
			}
			s := start(t, k, exec.Command("sleep", "300"))
			got := recordLines(t, dir)
			for _, e := range k.Entries() {
				if !slices.Contains(got, e.String()) {
					t.Errorf("record %q lacks the container's %v after Start", got, e)
				}
			}
			if mode == "cgroup" && len(got) != 2 {
				t.Errorf("record %q: want the session cgroup alone to cover its leaves", got)
			}
			if err := k.Close(closeCtx(t)); err != nil {
				t.Fatal(err)
			}
			s.wait(t)

			// Read back as the next launch would.
			entries, err := ReadRecord(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(entries, kept) {
				t.Errorf("ReadRecord: got %v, want %v among them", entries, kept)
			}
			if err := rec.Remove(); err != nil {
				t.Fatal(err)
			}
			if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
				t.Errorf("runtime dir after Remove: %v, %v; want it empty (no record, no temporary file)", left, err)
			}
		})
	}
}

// Closed containers' lines stay until they outnumber the live ones; the
// file then shrinks to what lives: it never grows with the number of
// starts.
func TestRecordCompacts(t *testing.T) {
	if testing.Short() {
		t.Skip("a scale test: thousands of starts: run without -short")
	}
	c := setupMode(t, "groups")
	dir := t.TempDir()
	if _, err := NewRecord(dir, c, nil); err != nil {
		t.Fatal(err)
	}
	live, err := c.New("live", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, live, exec.Command("sleep", "300"))
	most := 0
	for i := range 300 {
		k, err := c.New(fmt.Sprint("run", i), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("true")
		if err := k.Start(cmd); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if err := k.Close(closeCtx(t)); err != nil {
			t.Fatal(err)
		}
		most = max(most, len(recordLines(t, dir)))
	}
	got := recordLines(t, dir)
	if want := live.Entries()[0].String(); !slices.Contains(got, want) {
		t.Errorf("record %q lacks the live container's %s", got, want)
	}
	if most > 2*1+64+1 {
		t.Errorf("the record grew to %d lines for 1 live container, want at most %d", most, 2*1+64+1)
	}
	if err := live.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
}

// The attack of issue 8 item 5: a record that cannot be written. Start
// then fails, and what it started is killed before Start returns.
func TestRecordFailureStartsNothing(t *testing.T) {
	for _, mode := range []string{"subreaper", "groups"} {
		t.Run(mode, func(t *testing.T) {
			c := setupMode(t, mode)
			dir := t.TempDir()
			if _, err := NewRecord(dir, c, nil); err != nil {
				t.Fatal(err)
			}
			// What no write can go to, whoever runs the test (root too).
			path := filepath.Join(dir, recordFile)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
			k, err := c.New("unrecorded", Limits{})
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("sleep", "300")
			err = k.Start(cmd)
			if err == nil || !strings.Contains(err.Error(), "could not be recorded") {
				t.Fatalf("Start: got %v, want it refused as unrecorded", err)
			}
			if cmd.ProcessState == nil {
				t.Fatalf("Start failed but left the process %d unwaited", cmd.Process.Pid)
			}
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
				t.Errorf("the unrecorded process: %v, want it killed", cmd.ProcessState)
			}
			if err := k.Close(closeCtx(t)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestReadRecord(t *testing.T) {
	tests := []struct {
		name          string
		record, pgids string // the files' contents; "" for none
		want          []Entry
		err           string
	}{
		{name: "none"},
		{
			name:   "entries",
			record: recordHeader + "cgroup 77 /sys/fs/cgroup/mcpgen-ws-1\nproc 4242 99\n",
			want:   []Entry{{Kind: EntryCgroup, Inode: 77, Path: "/sys/fs/cgroup/mcpgen-ws-1"}, {Kind: EntryProc, Proc: ProcID{4242, 99}}},
		},
		{
			name:  "the old format's groups",
			pgids: "# mcpgen process groups: leader pid, leader start time (clock ticks after boot), session id\n4242 987654 77\n",
			want:  []Entry{{Kind: EntryProc, Proc: ProcID{4242, 987654}}},
		},
		{
			name:   "both files",
			record: "proc 12 3\n",
			pgids:  "  99 1 2  \n",
			want:   []Entry{{Kind: EntryProc, Proc: ProcID{12, 3}}, {Kind: EntryProc, Proc: ProcID{99, 1}}},
		},
		{name: "two fields", pgids: "123 456\n", err: `pgids:1: want "cgroup INODE PATH" or "proc PID START", got "123 456"`},
		{name: "init", pgids: "1 456 7\n", err: `got "1 456 7"`},
		{name: "a torn line", record: recordHeader + "proc 4242 99\nproc 42\n", err: `contained:3: want "cgroup INODE PATH" or "proc PID START", got "proc 42"`},
		{name: "unknown kind", record: "group 12 3 4\n", err: `got "group 12 3 4"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range map[string]string{recordFile: tt.record, legacyRecordFile: tt.pgids} {
				if text != "" {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			got, err := ReadRecord(dir)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "remove the file") {
					t.Errorf("got %v, %v; want an error with %s that says what to do", got, err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(recordHeader + "cgroup 77 /sys/fs/cgroup/mcpgen-ws-1\nproc 4242 99\n4242 987654 77\n"))
	f.Add([]byte("\n# comment\n  12 3 4  \n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := parseRecord(b)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.Kind == EntryProc && e.Proc.Pid <= 1 || e.Kind == EntryCgroup && !strings.HasPrefix(e.Path, "/") {
				t.Fatalf("parseRecord accepted %+v", e)
			}
		}
	})
}

// A server that keeps starting short-lived processes: under the subreaper,
// each one seen is recorded, and the record still stays bounded by what
// lives, not by what ever ran.
func TestRecordRefreshCompacts(t *testing.T) {
	if testing.Short() {
		t.Skip("a scale test: thousands of short-lived processes: run without -short")
	}
	c := setupMode(t, "subreaper")
	dir := t.TempDir()
	rec, err := NewRecord(dir, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.New("busy", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, k, exec.Command("sh", "-c", "while :; do sleep 0.02 & sleep 0.02; done"))
	seen := map[string]bool{}
	most := 0
	deadline := time.Now().Add(bound)
	for len(seen) < 100 {
		select {
		case <-c.Changed():
		case <-time.After(bound):
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d processes recorded within %s", len(seen), bound)
		}
		if err := rec.Refresh(); err != nil {
			t.Fatal(err)
		}
		lines := recordLines(t, dir)
		for _, l := range lines {
			seen[l] = true
		}
		most = max(most, len(lines))
	}
	// What lives: the shell and two sleeps, give or take a pair.
	if limit := 2*5 + 64 + 4; most > limit {
		t.Errorf("the record grew to %d lines for %d processes seen, want at most %d", most, len(seen), limit)
	}
	if err := k.Close(closeCtx(t)); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
}
