// Package trywrite writes to a descriptor without blocking: as much as it
// takes now, through the runtime's poller. A proxy that must not wait for a
// slow reader (an agent, a server that does not read its input) writes
// this way first, and waits elsewhere only for what did not go.
package trywrite
