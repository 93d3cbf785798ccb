package dirs

var hostDirs = linuxDirs
