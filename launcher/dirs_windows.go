package launcher

var hostDirs = windowsDirs
