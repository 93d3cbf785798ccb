package proc

import (
	"reflect"
	"testing"
)

// Layouts seen on real systems, as /proc/self/mountinfo and
// /proc/self/cgroup show them.
const (
	hybridMounts = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	hybridCgroup = `9:name=systemd:/
4:memory:/process_api/517360e4919c0ee5caa3bc3fca365e4e
1:cpu:/
0::/
`
	systemdMounts = `24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
26 24 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	systemdCgroup = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope\n"
	v1Mounts      = `32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
`
	v1Cgroup = "4:memory:/docker/abc\n1:cpu:/docker/abc\n"
	// A container with a cgroup namespace: it sees its cgroup as "/", and
	// the mount's root is "/" too.
	nsMounts = `610 600 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw
`
	nsCgroup = "0::/\n"
	// A container without one: the host's path, a bind mount of part of
	// the hierarchy, and a mount point with a space (octal-escaped).
	bindMounts = `700 600 0:26 /kubepods/pod1 /sys/fs/cgroup\040x rw,nosuid - cgroup2 cgroup rw
`
	bindCgroup = "0::/kubepods/pod1/ctr2\n"
)

func TestLocateCgroup(t *testing.T) {
	tests := []struct {
		name              string
		mountinfo, cgroup string
		want              *cgroupHost
		err               string
	}{
		{"hybrid", hybridMounts, hybridCgroup, &cgroupHost{mount: "/sys/fs/cgroup/unified", mountRoot: "/", self: "/", dir: "/sys/fs/cgroup/unified", v1: []string{"memory", "cpu"}}, ""},
		{"systemd user scope", systemdMounts, systemdCgroup, &cgroupHost{mount: "/sys/fs/cgroup", mountRoot: "/",
			self: "/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope",
			dir:  "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope"}, ""},
		{"v1 only", v1Mounts, v1Cgroup, nil, "no cgroup v2 hierarchy: this system has cgroup v1 only"},
		{"read-only in a container", nsMounts, nsCgroup, nil, "cgroup v2 at /sys/fs/cgroup is mounted read-only"},
		{"bind mount of a subtree", bindMounts, bindCgroup, &cgroupHost{mount: "/sys/fs/cgroup x", mountRoot: "/kubepods/pod1", self: "/kubepods/pod1/ctr2", dir: "/sys/fs/cgroup x/ctr2"}, ""},
		{"our cgroup not mounted", bindMounts, "0::/elsewhere\n", nil, "mcpgen's cgroup /elsewhere is on no mounted cgroup v2 hierarchy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := locateCgroup([]byte(tt.mountinfo), []byte(tt.cgroup))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("got %+v, %v; want error %q", got, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
}

func TestCgroupRel(t *testing.T) {
	h := &cgroupHost{mount: "/sys/fs/cgroup x", mountRoot: "/kubepods/pod1"}
	if got, want := h.rel("/sys/fs/cgroup x/ctr2/mcpgen-a-1/git-3"), "/kubepods/pod1/ctr2/mcpgen-a-1/git-3"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	h = &cgroupHost{mount: "/sys/fs/cgroup/unified", mountRoot: "/"}
	if got, want := h.rel("/sys/fs/cgroup/unified/mcpgen-a-1"), "/mcpgen-a-1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestInCgroup(t *testing.T) {
	file := []byte("4:memory:/x\n0::/mcpgen-a-1/git-3\n")
	tests := []struct {
		rel  string
		want bool
	}{
		{"/mcpgen-a-1/git-3", true},
		{"/mcpgen-a-1", true},
		{"/mcpgen-a-1/git-30", false},
		{"/mcpgen-a-1/git", false},
		{"/mcpgen-a-2", false},
	}
	for _, tt := range tests {
		if got := inCgroup(file, tt.rel); got != tt.want {
			t.Errorf("inCgroup(%q): got %v, want %v", tt.rel, got, tt.want)
		}
	}
}

func TestPlanLimits(t *testing.T) {
	hybrid := &cgroupHost{mount: "/sys/fs/cgroup/unified", dir: "/sys/fs/cgroup/unified", v1: []string{"memory", "cpu"}}
	scope := &cgroupHost{mount: "/sys/fs/cgroup", dir: "/sys/fs/cgroup/app.slice/run-r1.scope"}
	tests := []struct {
		name string
		host *cgroupHost
		f    cgroupFacts
		want limitsPlan
	}{
		{"hybrid: controllers bound to v1", hybrid, cgroupFacts{root: true},
			limitsPlan{missing: map[string]string{
				"memory": "cgroup v2 at /sys/fs/cgroup/unified without the memory controller, which is bound to a cgroup v1 hierarchy",
				"cpu":    "cgroup v2 at /sys/fs/cgroup/unified without the cpu controller, which is bound to a cgroup v1 hierarchy"}}},
		{"root of a pure v2 system", scope, cgroupFacts{root: true, controllers: []string{"cpu", "io", "memory", "pids"}, subtree: []string{"memory"}},
			limitsPlan{enable: []string{"cpu"}, use: []string{"memory", "cpu"}, missing: map[string]string{}}},
		{"delegated scope, alone", scope, cgroupFacts{controllers: []string{"memory", "cpu", "pids"}, alone: true},
			limitsPlan{moveSelf: true, enable: []string{"memory", "cpu"}, use: []string{"memory", "cpu"}, missing: map[string]string{}}},
		{"delegated scope, enabled already", scope, cgroupFacts{controllers: []string{"memory", "cpu"}, subtree: []string{"memory", "cpu"}},
			limitsPlan{use: []string{"memory", "cpu"}, missing: map[string]string{}}},
		{"delegated scope, shared", scope, cgroupFacts{controllers: []string{"memory", "cpu"}},
			limitsPlan{missing: map[string]string{
				"memory": "cgroup v2 at /sys/fs/cgroup, where mcpgen's cgroup /sys/fs/cgroup/app.slice/run-r1.scope holds other processes too, so that no controller can be enabled below it",
				"cpu":    "cgroup v2 at /sys/fs/cgroup, where mcpgen's cgroup /sys/fs/cgroup/app.slice/run-r1.scope holds other processes too, so that no controller can be enabled below it"}}},
		{"scope with cpu only", scope, cgroupFacts{controllers: []string{"cpu", "pids"}, alone: true},
			limitsPlan{moveSelf: true, enable: []string{"cpu"}, use: []string{"cpu"}, missing: map[string]string{
				"memory": "cgroup v2 at /sys/fs/cgroup, whose memory controller is not delegated to mcpgen's cgroup /sys/fs/cgroup/app.slice/run-r1.scope"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := planLimits(tt.host, tt.f); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestCgroupName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"git", "git"},
		{"my server/../x", "my_server____x"},
		{"", "_"},
		{"cgroup.procs", "cgroup_procs"},
		{"ünï", "__n__"},
		{"a123456789b123456789c123456789d123456789e123456789f", "a123456789b123456789c123456789d123456789e1234567"},
	}
	for _, tt := range tests {
		if got := cgroupName(tt.in); got != tt.want {
			t.Errorf("cgroupName(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseProcInfo(t *testing.T) {
	tests := []struct {
		name, line string
		want       procInfo
		err        bool
	}{
		{"plain", "42 (sleep) S 1 42 42 0 -1 4194560 90 0 0 0 0 0 0 0 20 0 1 0 12345 1000 100 0 0", procInfo{pid: 42, state: 'S', ppid: 1, pgid: 42, sid: 42, start: 12345}, false},
		{"name with ) and spaces", "7 (a) b (c)) Z 3 4 5 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0", procInfo{pid: 7, state: 'Z', ppid: 3, pgid: 4, sid: 5, start: 99}, false},
		{"truncated", "7 (x) S 1 2 3", procInfo{}, true},
		{"no name", "7 x S 1 2 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99", procInfo{}, true},
	}
	for _, tt := range tests {
		got, err := parseProcInfo([]byte(tt.line))
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v (error %v)", tt.name, got, err, tt.want, tt.err)
		}
	}
}
