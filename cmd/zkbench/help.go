package main

import (
	"embed"
	"strings"
)

// helpFiles hold the commands' long help and examples, prose kept apart
// from the code that wires the commands: help/<name>.txt is the long
// text, then, after a line "Examples:", the examples. A subcommand's name
// is its parent's and its own, joined by "-" (cluster-up).
//
//go:embed help/*.txt
var helpFiles embed.FS

// longHelp is the long help of command name ("" for a command with no
// file: TestEveryCommandHasHelp fails then).
func longHelp(name string) string {
	long, _ := help(name)
	return long
}

// examples are the examples of command name.
func examples(name string) string {
	_, example := help(name)
	return example
}

func help(name string) (long, example string) {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		return "", ""
	}
	long, example, _ = strings.Cut(strings.TrimRight(string(b), "\n"), "\nExamples:\n")
	return long, example
}
