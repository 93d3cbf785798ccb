package agent

import (
	"testing"
	"time"

	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
)

const waitLong = testserver.WaitLong

// TestDrain: wait returns once nothing is owed, each kick looking again;
// when gone is closed or the bound passes first, it reports so.
func TestDrain(t *testing.T) {
	tests := []struct {
		name  string
		owed  int // answers owed, each answered with a Kick
		gone  bool
		bound time.Duration
		want  bool
	}{
		{"nothing owed", 0, false, waitLong, true},
		{"three answers", 3, false, waitLong, true},
		{"the client went", 1, true, waitLong, false},
		{"the bound passed", 1, false, time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDrain()
			owed := make(chan int, 1)
			owed <- tt.owed
			gone := make(chan struct{})
			if tt.gone {
				close(gone)
			}
			answered := make(chan struct{})
			if !tt.gone && tt.bound == waitLong {
				go func() { // the answers go out, one by one
					defer close(answered)
					for range tt.owed {
						n := <-owed
						owed <- n - 1
						d.kick()
					}
				}()
			} else {
				close(answered)
			}
			got := d.wait(gone, tt.bound, func() bool {
				n := <-owed
				owed <- n
				return n > 0
			})
			<-answered
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
