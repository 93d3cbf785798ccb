package manifest

// SystemReadPaths are what every sandboxed process may read on Linux,
// besides its grants: the programs and libraries of the system, the
// dynamic loader's cache, certificates, name resolution, users and time
// zones, and the devices that programs open without asking. Not the
// whole of /etc, which holds other programs' secrets.
var SystemReadPaths = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl", "/etc/ca-certificates", "/etc/pki",
	"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
	"/etc/passwd", "/etc/group", "/etc/localtime", "/etc/timezone", "/etc/mime.types",
	"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom",
}
