//go:build !unix

package gateway

import "time"

// processCPU is not read here: benchmarks report no CPU time.
func processCPU() time.Duration { return 0 }
