package dirs

var hostDirs = windowsDirs
