package main

// exeSuffix ends the names of programs that mcpgen new builds: go build -o
// writes the name it is given, and Windows starts only a program whose
// name has an extension it runs.
const exeSuffix = ".exe"
