package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestIsTerminal: only a terminal gets the live table. /dev/null is a
// character device too, and used to count as one.
func TestIsTerminal(t *testing.T) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	tty := openPty(t)

	tests := []struct {
		name string
		w    io.Writer
		want bool
	}{
		{"/dev/null", devNull, false},
		{"a file", file, false},
		{"a pipe", w, false},
		{"a buffer", &bytes.Buffer{}, false},
		{"a terminal", tty, true},
	}
	for _, tt := range tests {
		if got := isTerminal(tt.w); got != tt.want {
			t.Errorf("isTerminal(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// openPty opens a pseudo-terminal and returns its terminal end; the test
// closes both ends.
func openPty(t *testing.T) *os.File {
	t.Helper()
	_, tty := openPtyPair(t)
	return tty
}

// openPtyPair opens a pseudo-terminal and returns both ends, which the
// test closes.
func openPtyPair(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return ptmx, tty
}

// TestTerminalSize: the live table learns the terminal's size, which
// bounds what it draws; elsewhere it has none.
func TestTerminalSize(t *testing.T) {
	tty := openPty(t)
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 7, Col: 33}); err != nil {
		t.Fatalf("setting the pseudo-terminal's size: %v", err)
	}
	if cols, rows := terminalSize(tty); cols != 33 || rows != 7 {
		t.Errorf("terminalSize(a 33x7 terminal) = %d, %d", cols, rows)
	}
	if cols, rows := terminalSize(&bytes.Buffer{}); cols != 0 || rows != 0 {
		t.Errorf("terminalSize(a buffer) = %d, %d; want 0, 0", cols, rows)
	}
}
