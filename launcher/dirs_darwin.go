package launcher

var hostDirs = darwinDirs
