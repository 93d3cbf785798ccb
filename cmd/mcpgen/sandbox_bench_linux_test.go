package main

import (
	"os/exec"
	"testing"

	"github.com/mcpgen/mcpgen/internal/sandbox"
)

// BenchmarkSandboxSpawn is what the sandbox adds to a start, with the
// mcpgen binary as its setup step (as users run it): /bin/true started
// and waited for without a sandbox, and in one with no network, a
// loopback and a host list; beside them, util-linux's unshare making the
// same PID, mount and network namespaces (C, no Landlock): the floor of
// the namespaces alone.
//
//	go test -run '^$' -bench SandboxSpawn ./cmd/mcpgen
func BenchmarkSandboxSpawn(b *testing.B) {
	bin, err := buildMcpgen()
	if err != nil {
		b.Fatal(err)
	}
	if r := sandbox.Inspect(&sandbox.Policy{Network: sandbox.Network{Mode: sandbox.NetNone}}); len(r.NotEnforced) > 0 {
		b.Logf("the sandbox here does not enforce everything:\n%s", r)
	}
	ws := b.TempDir()
	for _, c := range []struct {
		name   string
		policy *sandbox.Policy
	}{
		{"off", nil},
		{"none", &sandbox.Policy{Write: []string{ws}, Network: sandbox.Network{Mode: sandbox.NetNone}}},
		{"loopback", &sandbox.Policy{Write: []string{ws}, Network: sandbox.Network{Mode: sandbox.NetLoopback}}},
		{"hosts", &sandbox.Policy{Write: []string{ws}, Network: sandbox.Network{Mode: sandbox.NetHosts, Hosts: []string{"api.example.com:443"}}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				var s *sandbox.Setup
				if c.policy != nil {
					if s, err = sandbox.Prepare(cmd, c.policy); err != nil {
						b.Fatal(err)
					}
					// The setup step is the mcpgen binary, not this test.
					cmd.Path, cmd.Args[0] = bin, bin
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
	b.Run("unshare", func(b *testing.B) {
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			b.Skip("no unshare(1)")
		}
		for b.Loop() {
			if err := exec.Command(unshare, "--pid", "--mount", "--net", "--fork", "--mount-proc", "/bin/true").Run(); err != nil {
				b.Skipf("unshare: %v (not allowed here)", err)
			}
		}
	})
}
