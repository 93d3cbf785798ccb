package proc

import (
	"os"
	"syscall"
	"testing"
)

func TestParseStat(t *testing.T) {
	tail := " 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 987654 23 24\n" // fields 7 on
	tests := []struct {
		name string
		line string
		want Stat
		err  bool
	}{
		{
			name: "plain",
			line: "4242 (sleep) S 10 4242 77" + tail,
			want: Stat{Pid: 4242, Comm: "sleep", State: 'S', PPid: 10, Pgid: 4242, Sid: 77, Start: 987654},
		},
		{
			name: "name with spaces and parentheses",
			line: "4242 (a) (b c) Z 10 4241 77" + tail,
			want: Stat{Pid: 4242, Comm: "a) (b c", State: 'Z', PPid: 10, Pgid: 4241, Sid: 77, Start: 987654},
		},
		{name: "too few fields", line: "4242 (sleep) S 10 4242 77 1 2 3\n", err: true},
		{name: "no name", line: "4242 S 10 4242 77" + tail, err: true},
		{name: "bad pid", line: "x (sleep) S 10 4242 77" + tail, err: true},
		{name: "bad start", line: "4242 (sleep) S 10 4242 77 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 -1 23\n", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.line))
			if tt.err {
				if err == nil {
					t.Errorf("parseStat = %+v, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("parseStat = %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}

	// And the real thing.
	st, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.Pid != os.Getpid() || st.PPid != os.Getppid() || st.Pgid != syscall.Getpgrp() || st.Start == 0 {
		t.Errorf("ReadStat(self) = %+v, want pid %d, ppid %d, pgid %d, a start time", st, os.Getpid(), os.Getppid(), syscall.Getpgrp())
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("4242 (a) (b c) Z 10 4241 77 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 987654 23 24\n"))
	f.Add([]byte("1 () R 0 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseStat(b) // must not panic
	})
}
