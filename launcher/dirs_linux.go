package launcher

var hostDirs = linuxDirs
