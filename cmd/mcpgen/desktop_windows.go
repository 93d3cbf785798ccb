package main

var hostDesktopConfig desktopConfigRule = desktopConfigWindows
