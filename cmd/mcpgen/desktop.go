package main

import "path/filepath"

// Where Claude Desktop keeps its config, on each system. Every system's
// rule is here, so that tests on any system can check each;
// desktop_<os>.go picks the one that applies (hostDesktopConfig).

// A desktopConfigRule returns Claude Desktop's config file, given the
// user's home and the environment.
type desktopConfigRule func(home string, getenv func(string) string) string

// desktopConfigDarwin is ~/Library/Application Support/Claude.
func desktopConfigDarwin(home string, _ func(string) string) string {
	return filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json")
}

// desktopConfigWindows is %APPDATA%\Claude (the roaming profile), else the
// profile's AppData\Roaming.
func desktopConfigWindows(home string, getenv func(string) string) string {
	if appData := getenv("APPDATA"); appData != "" {
		return filepath.Join(appData, "Claude", "claude_desktop_config.json")
	}
	return filepath.Join(home, "AppData", "Roaming", "Claude", "claude_desktop_config.json")
}

// desktopConfigLinux is $XDG_CONFIG_HOME/Claude, else ~/.config/Claude,
// where the community builds of Claude Desktop for Linux keep it.
func desktopConfigLinux(home string, getenv func(string) string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "Claude", "claude_desktop_config.json")
}
