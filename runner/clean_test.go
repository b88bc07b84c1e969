package runner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zkbench/zkbench/backends"
)

// fakeAdmin lists names below backends.Root and records what it deletes.
type fakeAdmin struct {
	names   []string
	deleted []string
	fail    string // a path whose DeleteTree fails
}

func (a *fakeAdmin) List(_ context.Context, path string) ([]string, error) {
	if path != backends.Root {
		return nil, errors.New("listed " + path)
	}
	return a.names, nil
}

func (a *fakeAdmin) DeleteTree(_ context.Context, path string) error {
	if path == a.fail {
		return errors.New("refused")
	}
	a.deleted = append(a.deleted, path)
	return nil
}

// TestCleanNamespaces: a dry run removes nothing, --run removes one
// namespace, a name that is not a run's is skipped, and a failure is
// reported beside the others' removal. (cmd/zkbench's TestClean runs
// zkbench clean on real servers.)
func TestCleanNamespaces(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		admin   fakeAdmin
		runID   string
		dryRun  bool
		deleted []string
		said    string
		fails   bool
	}{
		{"dry run", fakeAdmin{names: []string{"a", "b"}}, "", true, nil, "Would remove 2 namespace(s) on here", false},
		{"every run", fakeAdmin{names: []string{"a", "b"}}, "", false, []string{backends.Namespace("a"), backends.Namespace("b")}, "Removed 2 of 2", false},
		{"one run", fakeAdmin{names: []string{"a", "b"}}, "b", false, []string{backends.Namespace("b")}, "Removed 1 of 1", false},
		{"no such run", fakeAdmin{names: []string{"a"}}, "b", false, nil, "Nothing to clean: here has no " + backends.Namespace("b"), false},
		{"nothing", fakeAdmin{}, "", false, nil, "Nothing to clean: nothing below", false},
		{"not a run's", fakeAdmin{names: []string{"..", "a"}}, "", false, []string{backends.Namespace("a")}, "Skipping", false},
		{"a failure", fakeAdmin{names: []string{"a", "b"}, fail: backends.Namespace("a")}, "", false, []string{backends.Namespace("b")}, "FAILED", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			err := CleanNamespaces(ctx, &out, &tc.admin, tc.runID, tc.dryRun, "here")
			if (err != nil) != tc.fails {
				t.Errorf("error %v, want one: %v", err, tc.fails)
			}
			if !slices.Equal(tc.admin.deleted, tc.deleted) {
				t.Errorf("deleted %q, want %q", tc.admin.deleted, tc.deleted)
			}
			if !strings.Contains(out.String(), tc.said) {
				t.Errorf("said %q, want %q in it", out.String(), tc.said)
			}
		})
	}
}

func TestParseBackend(t *testing.T) {
	if k, err := ParseBackend("zookeeper", false); err != nil || k != backends.ZooKeeper {
		t.Errorf("zookeeper: %v %v", k, err)
	}
	if k, err := ParseBackend("", true); err != nil || k != "" {
		t.Errorf("optional: %v %v", k, err)
	}
	for _, bad := range []string{"", "consul"} {
		if _, err := ParseBackend(bad, false); err == nil || !strings.HasPrefix(err.Error(), "--backend") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
