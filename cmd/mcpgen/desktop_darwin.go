package main

var hostDesktopConfig desktopConfigRule = desktopConfigDarwin
