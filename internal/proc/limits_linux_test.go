package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// As Go's runtime leaves it at start, the soft limit is within one of the
// hard one; RaiseFileLimit then changes nothing, so that os/exec goes on
// giving children the limit the launcher was started with.
func TestRaiseFileLimitLeavesGosRaise(t *testing.T) {
	var before, after syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &before); err != nil {
		t.Fatal(err)
	}
	soft, hard, err := RaiseFileLimit()
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &after); err != nil {
		t.Fatal(err)
	}
	if err != nil || soft != before.Cur || hard != before.Max || after != before {
		t.Errorf("got soft %d hard %d (%v), limit %+v; want %+v unchanged", soft, hard, err, after, before)
	}
	if before.Cur+1 < before.Max {
		t.Errorf("soft limit %d, hard %d: Go's runtime did not raise it at start", before.Cur, before.Max)
	}
}

// helperRlimit lowers its soft limit to 256, as a launcher started by a
// careful parent might find it, then raises it and checks a capacity.
func helperRlimit() int {
	lim := syscall.Rlimit{Cur: 256}
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &cur); err != nil {
		fmt.Println(err)
		return 1
	}
	lim.Max = cur.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Println(err)
		return 1
	}
	soft, hard, err := RaiseFileLimit()
	fmt.Printf("raised %d %d %v\n", soft, hard, err)
	if err := CheckCapacity(Capacity{Servers: 40}); err != nil {
		fmt.Println(err)
	} else {
		fmt.Println("40 servers fit")
	}
	return 0
}

func TestRaiseFileLimitRaises(t *testing.T) {
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &cur); err != nil {
		t.Fatal(err)
	}
	if cur.Max < 1024 {
		t.Skipf("hard limit %d: too low to show a raise from 256", cur.Max)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), "MCPGEN_PROC_HELPER=rlimit")
	out, err := cmd.CombinedOutput()
	want := fmt.Sprintf("raised %d %d <nil>\n40 servers fit\n", cur.Max, cur.Max)
	if err != nil || string(out) != want {
		t.Errorf("got %q, %v; want %q", out, err, want)
	}
}

func TestCheckCapacity(t *testing.T) {
	soft, hard, err := RaiseFileLimit()
	if err != nil {
		t.Fatal(err)
	}
	if soft == Unlimited {
		t.Skip("no file descriptor limit here")
	}
	fits := int(soft-FilesReserved) / FilesPerServer
	tests := []struct {
		name string
		c    Capacity
		fit  bool
	}{
		{"no server", Capacity{}, true},
		{"as many as fit", Capacity{Servers: fits}, true},
		{"one more", Capacity{Servers: fits + 1}, false},
		{"10000 servers with clients", Capacity{Servers: 10000, Clients: 20000, Starts: 64}, uint64(FilesReserved+50000+20000+384) <= soft},
	}
	for _, tt := range tests {
		err := CheckCapacity(tt.c)
		var ce *CapacityError
		if tt.fit {
			if err != nil {
				t.Errorf("%s: got %v, want it to fit in %d", tt.name, err, soft)
			}
			continue
		}
		if !errors.As(err, &ce) || ce.Soft != soft || ce.Hard != hard || ce.Need != tt.c {
			t.Errorf("%s: got %v, want a *CapacityError with limit %d/%d", tt.name, err, soft, hard)
		} else if !strings.Contains(err.Error(), fmt.Sprintf("need about %d file descriptors", tt.c.Files())) {
			t.Errorf("%s: %q does not say how many are needed", tt.name, err)
		}
	}
}
