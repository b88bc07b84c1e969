package docker_test

import (
	dockercluster "github.com/zkbench/zkbench/cluster/docker"
	"github.com/zkbench/zkbench/faults"
)

// A Docker cluster takes the fault rig's server faults. The check is a
// test's so that the package, which the backends' test servers import, does
// not depend on faults and through it on the results file: backends/...
// stays below results and figures.
var (
	_ faults.Cluster     = (*dockercluster.Cluster)(nil)
	_ faults.Partitioner = (*dockercluster.Cluster)(nil)
)
