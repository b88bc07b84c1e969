package main

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command a user sees has its long help, every command with an
// argument or a flag of its own its examples, and every help file is a
// command's.
func TestEveryCommandHasHelp(t *testing.T) {
	files, err := fs.Glob(helpFiles, "help/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	unused := map[string]bool{}
	for _, f := range files {
		unused[strings.TrimSuffix(strings.TrimPrefix(f, "help/"), ".txt")] = true
	}
	var walk func(c *cobra.Command, name string)
	walk = func(c *cobra.Command, name string) {
		if c.Hidden || c.Name() == "version" || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		delete(unused, name)
		if c.Long == "" {
			t.Errorf("%s: no long help (help/%s.txt)", c.CommandPath(), name)
		}
		if c.Runnable() && c.HasAvailableLocalFlags() && c.Example == "" && !c.HasSubCommands() {
			t.Errorf("%s: no examples (help/%s.txt, after a line \"Examples:\")", c.CommandPath(), name)
		}
		for _, sub := range c.Commands() {
			walk(sub, strings.TrimPrefix(name+"-"+sub.Name(), "zkbench-"))
		}
	}
	walk(newRootCmd(), "zkbench")
	for name := range unused {
		t.Errorf("help/%s.txt: no command of that name", name)
	}
}
