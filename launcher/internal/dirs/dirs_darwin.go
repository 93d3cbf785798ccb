package dirs

var hostDirs = darwinDirs
