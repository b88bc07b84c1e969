package main

import (
	"cmp"
	"embed"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// helpFiles hold the commands' long help and examples, prose kept apart
// from the code that wires the commands: help/<name>.txt is the long
// text, then, after a line "Examples:", the examples. A subcommand's name
// is its parent's and its own, joined by "-" (cluster-up).
//
//go:embed help/*.txt
var helpFiles embed.FS

// withHelp gives cmd and every command below it its long help and examples
// from its file (where the command sets none) and a refusal of a wrong count
// of arguments that says what it takes. name: its path, "-" for spaces.
func withHelp(cmd *cobra.Command, name string) *cobra.Command {
	long, example := help(name)
	cmd.Long = cmp.Or(cmd.Long, long)
	cmd.Example = cmp.Or(cmd.Example, example)
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				return fmt.Errorf("%s: %w; usage: %s (examples: %s --help)", strings.TrimPrefix(c.CommandPath(), "zkbench "), err, c.UseLine(), c.CommandPath())
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		withHelp(sub, strings.TrimPrefix(name+"-"+sub.Name(), "zkbench-"))
	}
	return cmd
}

func help(name string) (long, example string) {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		return "", ""
	}
	long, example, _ = strings.Cut(strings.TrimRight(string(b), "\n"), "\nExamples:\n")
	return long, example
}
