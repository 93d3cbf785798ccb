package proc

import "testing"

func TestCapacityFiles(t *testing.T) {
	tests := []struct {
		c    Capacity
		want int
	}{
		{Capacity{}, FilesReserved},
		{Capacity{Servers: 1}, FilesReserved + 5},
		{Capacity{Servers: 10000, Clients: 20000, Starts: 64}, FilesReserved + 50000 + 20000 + 64*6},
	}
	for _, tt := range tests {
		if got := tt.c.Files(); got != tt.want {
			t.Errorf("%+v: got %d, want %d", tt.c, got, tt.want)
		}
	}
	e := &CapacityError{Need: Capacity{Servers: 10000, Clients: 2, Starts: 64}, Soft: 20000, Hard: 20000}
	want := "10000 servers need about 50450 file descriptors (5 each, 2 for 2 clients, 384 for 64 starting at once, 64 for the launcher), but the limit is 20000 (hard limit 20000): raise the hard limit (ulimit -Hn as root, LimitNOFILE= in a systemd unit) or run fewer servers"
	if got := e.Error(); got != want {
		t.Errorf("CapacityError:\ngot  %q\nwant %q", got, want)
	}
}
