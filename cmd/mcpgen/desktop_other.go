//go:build !darwin && !windows

package main

var hostDesktopConfig desktopConfigRule = desktopConfigLinux
