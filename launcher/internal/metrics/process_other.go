//go:build !linux

package metrics

// What /proc gives on Linux is not read elsewhere.
func residentBytes() (int64, bool) { return 0, false }
func openFDs() (int, bool)         { return 0, false }
