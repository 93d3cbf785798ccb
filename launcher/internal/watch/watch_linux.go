package watch

import (
	"errors"
	"fmt"
	"syscall"
)

// overflowHint says what to raise when inotify drops events.
const overflowHint = " (raise fs.inotify.max_queued_events)"

// watchError describes a failure to watch dir, with the limit to raise
// when it is one.
func watchError(dir string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("watch %s: %v (raise fs.inotify.max_user_watches)", dir, err)
	case errors.Is(err, syscall.EMFILE):
		return fmt.Errorf("watch %s: %v (raise fs.inotify.max_user_instances)", dir, err)
	}
	return fmt.Errorf("watch %s: %v", dir, err)
}
