//go:build !linux

package proc

// Init returns ok false: mcpgen acts as init only on Linux, where
// containers have PID namespaces.
func Init() (code int, ok bool) { return 0, false }
