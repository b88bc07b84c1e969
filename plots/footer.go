package plots

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zkbench/zkbench/results"
)

// maxFooterRuns is how many runs a footer names one by one; the rest are
// counted.
const maxFooterRuns = 4

// footerOf says where a figure's data came from, a line a run: the run's id
// and start, the zkbench that measured it (results.Run.Tool), the servers
// (backend, how zkbench reached them, members and their versions) and the
// machine the clients ran on. A figure copied out of its folder still says
// which run and machine it shows.
func footerOf(runs []*results.Run) []string {
	var lines []string
	for i, r := range runs {
		if i == maxFooterRuns-1 && len(runs) > maxFooterRuns {
			var ids []string
			for _, rest := range runs[i:] {
				ids = append(ids, rest.ID)
			}
			lines = append(lines, fmt.Sprintf("and %d more runs: %s", len(ids), strings.Join(ids, ", ")))
			break
		}
		parts := []string{"run " + r.ID}
		if !r.StartedAt.IsZero() {
			parts[0] += ", " + r.StartedAt.UTC().Format("2006-01-02 15:04 UTC")
		}
		if r.Tool != "" {
			parts = append(parts, r.Tool)
		}
		parts = append(parts, serversOf(r))
		if e := r.Environment; e.Hostname != "" {
			host := "clients on " + e.Hostname
			if e.CPUs > 0 {
				host += fmt.Sprintf(" (%s/%s, %d CPUs)", e.OS, e.Arch, e.CPUs)
			}
			parts = append(parts, host)
		}
		lines = append(lines, strings.Join(parts, " · "))
	}
	return lines
}

// clusterModes says in words how zkbench reached the servers
// (results.Run.ClusterMode).
var clusterModes = map[string]string{
	"embedded": "embedded in zkbench",
	"local":    "local processes",
	"docker":   "Docker containers",
	"remote":   "remote",
}

// serversOf names a run's servers: "zookeeper 3.8.0, Docker containers, 3
// members: leader, 2 followers". Members of one version name it once.
func serversOf(r *results.Run) string {
	kind := string(r.Cluster.Kind)
	if kind == "" {
		kind = string(r.Config.Backend)
	}
	var versions []string
	for _, m := range r.Cluster.Members {
		v := m.Version
		if v == "" {
			v = "version not recorded"
		}
		if !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
	}
	s := kind
	if len(versions) > 0 {
		s += " " + strings.Join(versions, "/")
	}
	if mode := r.ClusterMode; mode != "" {
		if words, ok := clusterModes[mode]; ok {
			mode = words
		}
		s += ", " + mode
	}
	n := len(r.Cluster.Members)
	if n == 0 {
		return s + ", members not recorded"
	}
	s += fmt.Sprintf(", %d member", n)
	if n > 1 {
		s += "s"
	}
	// Roles as counts in first-seen order: "leader, 2 followers".
	var roles []string
	count := map[string]int{}
	for _, m := range r.Cluster.Members {
		if m.Role == "" {
			continue
		}
		if count[m.Role] == 0 {
			roles = append(roles, m.Role)
		}
		count[m.Role]++
	}
	slices.SortStableFunc(roles, func(a, b string) int { return count[a] - count[b] })
	var said []string
	for _, role := range roles {
		if c := count[role]; c > 1 {
			said = append(said, fmt.Sprintf("%d %ss", c, role))
		} else {
			said = append(said, role)
		}
	}
	if len(said) > 0 {
		s += ": " + strings.Join(said, ", ")
	}
	if r.ClusterMode == "remote" {
		var eps []string
		for _, m := range r.Cluster.Members {
			eps = append(eps, m.Endpoint)
		}
		s += " at " + strings.Join(eps, ", ")
	}
	return s
}
