package manifest

// SystemReadPaths are what every sandboxed process may read on macOS,
// besides its grants: the system's programs, libraries and frameworks,
// Homebrew's prefixes, certificates, name resolution, users and time
// zones, and the devices that programs open without asking.
var SystemReadPaths = []string{
	"/usr", "/bin", "/sbin", "/System", "/Library/Frameworks", "/Library/Apple",
	"/opt/homebrew", "/usr/local",
	"/private/etc/ssl", "/private/etc/resolv.conf", "/private/etc/hosts",
	"/private/etc/passwd", "/private/etc/group", "/private/etc/localtime", "/private/var/db/timezone",
	"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom",
}
