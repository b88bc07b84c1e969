package runflags

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// The Job's flags are checked as given: --claim with the default
// --storage-size is a Job; with one given, or with etcd's Secrets on
// ZooKeeper, or a size or request of 0 or less, it is refused before any
// manifest is built.
func TestKubeJobManifestsRefuse(t *testing.T) {
	base := []string{"--endpoints", "zk-0.zk:2181", "--backend", "zookeeper", "--clients", "100", "--shards", "2"}
	for _, c := range []struct {
		args []string
		want string // "": accepted
	}{
		{[]string{"--claim", "nfs"}, ""},
		{[]string{"--claim", "nfs", "--storage-size", "5Gi"}, "--storage-size: --claim uses an existing claim"},
		{[]string{"--claim", "nfs", "--storage-class", "fast"}, "--storage-class: --claim uses an existing claim"},
		{[]string{"--tls-secret", "s"}, "--tls-secret: only etcd reads it, and this run's backend is zookeeper"},
		{[]string{"--password-secret", "s:k"}, "--password-secret: only etcd reads it, and this run's backend is zookeeper"},
		{[]string{"--cpu", "-2"}, "--cpu -2: want a positive quantity such as 1 or 500m"},
		{[]string{"--cpu", "0", "--memory", "0"}, "--cpu 0: want a positive quantity such as 1 or 500m"},
		{[]string{"--memory", "-5Gi"}, "--memory -5Gi: want a positive quantity"},
		{[]string{"--storage-size", "-1Gi"}, "--storage-size -1Gi: want a positive quantity such as 1Gi or 500Mi"},
	} {
		fl := pflag.NewFlagSet("kube job", pflag.ContinueOnError)
		k := BindKubeJob(fl, "zkbench/zkbench:test")
		args := append(append([]string{}, base...), c.args...)
		if err := fl.Parse(args); err != nil {
			t.Fatal(err)
		}
		_, _, err := k.Manifests(fl)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: error %v, want %q", c.args, err, c.want)
		}
	}
}
