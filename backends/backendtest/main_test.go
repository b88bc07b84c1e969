package backendtest_test

import (
	"testing"

	"github.com/zkbench/zkbench/internal/testcluster"
)

// TestMain stops the shared servers and removes their folders at the end.
func TestMain(m *testing.M) { testcluster.Main(m) }
