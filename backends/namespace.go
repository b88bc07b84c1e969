package backends

import (
	"fmt"
	"path"
	"strings"
)

// Root is the top of zkbench's namespace: every node or key zkbench makes
// lives below Root+"/"+runID, and zkbench never deletes anything outside it.
const Root = "/zkbench"

// Namespace returns the run's own subtree, /zkbench/<runID>.
func Namespace(runID string) string { return Root + "/" + runID }

// ValidRunID rejects ids that would escape the namespace or make odd paths.
func ValidRunID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("backends: run id %q must be 1 to 64 characters", id)
	}
	for _, r := range id {
		ok := r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok {
			return fmt.Errorf("backends: run id %q may hold only letters, digits, '-', '_' and '.'", id)
		}
	}
	if id == "." || id == ".." {
		return fmt.Errorf("backends: run id %q is not allowed", id)
	}
	return nil
}

// InNamespace reports whether p is strictly inside zkbench's namespace
// (below /zkbench/<something>). Admin deletions must check it.
func InNamespace(p string) bool {
	c := path.Clean(p)
	if c != p || !strings.HasPrefix(c, Root+"/") {
		return false
	}
	rest := strings.TrimPrefix(c, Root+"/")
	return rest != "" && !strings.HasPrefix(rest, ".")
}
