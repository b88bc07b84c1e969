package runner

import (
	"fmt"
	"os"
	"time"

	"github.com/zkbench/zkbench/backends"
	zkbackend "github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// Auto, as Config.Warmup, Servers.SessionTimeout or Servers.LeaseTTL, lets
// the run choose the setting from its largest client count (zero does the
// same for the two timeouts, which cannot be zero). What it chose and why
// is recorded in results.Run.Settings.
const Auto time.Duration = -1

// The rules behind Auto. A client's own keep-alives (ZooKeeper pings, etcd
// lease renewals) are goroutines of this process: while thousands of
// sessions open and queue at once, they run late, by roughly a constant
// per client on a small machine, so a timeout fixed for ten clients
// expires sessions at ten thousand. The warm-up grows for the same start-up
// burst, which is not the steady state being measured.
const (
	defaultSessionTimeout = zkbackend.DefaultSessionTimeout
	defaultLeaseTTL       = 5 * time.Second
	defaultWarmup         = 500 * time.Millisecond
	timeoutPerClient      = 3 * time.Millisecond
	warmupPerClient       = time.Millisecond
	maxAutoTimeout        = 30 * time.Second
)

// scaledTimeout is def, or perClient × n rounded up to a second when that
// is longer, at most maxAutoTimeout.
func scaledTimeout(def time.Duration, n int) time.Duration {
	d := time.Duration(n) * timeoutPerClient
	if d <= def {
		return def
	}
	return min((d + time.Second - 1).Truncate(time.Second), maxAutoTimeout)
}

// chooseSettings resolves Auto settings for the plan's largest case and
// records every setting that followed the scale.
func (p *plan) chooseSettings() []results.Setting {
	n := maxInt(p.cfg.Clients)
	var out []results.Setting
	scaled := func(name string, v, def time.Duration, per time.Duration, what string) {
		why := fmt.Sprintf("auto: the default %v up to %d clients", def, int(def/per))
		if v > def {
			why = fmt.Sprintf("auto: %d clients x %v, rounded up%s (%s)", n, per, capNote(v), what)
		}
		out = append(out, results.Setting{Name: name, Value: v.String(), Why: why})
	}
	srv := &p.Servers
	if p.kind == backends.ZooKeeper && (srv.SessionTimeout == Auto || srv.SessionTimeout == 0) {
		srv.SessionTimeout = scaledTimeout(defaultSessionTimeout, n)
		scaled("session-timeout", srv.SessionTimeout, defaultSessionTimeout, timeoutPerClient,
			"the clients' pings run late while thousands of sessions start and queue")
	}
	if p.kind == backends.Etcd && (srv.LeaseTTL == Auto || srv.LeaseTTL == 0) {
		srv.LeaseTTL = scaledTimeout(defaultLeaseTTL, n)
		scaled("lease-ttl", srv.LeaseTTL, defaultLeaseTTL, timeoutPerClient,
			"the clients' lease renewals run late while thousands of sessions start and queue")
	}
	if p.cfg.Warmup == Auto {
		w := AutoWarmup(n)
		p.cfg.Warmup = w
		why := fmt.Sprintf("auto: the default %v up to %d clients", defaultWarmup, int(defaultWarmup/warmupPerClient))
		if w > defaultWarmup {
			why = fmt.Sprintf("auto: %d clients x %v, so that the start-up burst of queueing is not measured", n, warmupPerClient)
		}
		out = append(out, results.Setting{Name: "warmup", Value: w.String(), Why: why})
	}
	if p.cfg.Hold == Auto {
		p.cfg.Hold = 0
		if p.cfg.Rate == 0 && p.wspec.DefaultHold > 0 {
			p.cfg.Hold = p.wspec.DefaultHold
			out = append(out, results.Setting{Name: "hold", Value: p.cfg.Hold.String(),
				Why: fmt.Sprintf("auto: the %s workload's default in a closed loop, a critical section, so that the "+
					"cases measure handoffs at a load the servers carry, not acquisitions back to back that saturate "+
					"the machine (--hold 0 runs them back to back)", p.wspec.Name)})
		}
	}
	if pct, st, ok := gcSetting(n, os.Getenv("GOGC") != ""); ok {
		p.gcPercent = pct
		out = append(out, st)
	}
	if n > measure.ReleaseMemoryFrom {
		out = append(out, results.Setting{Name: "release-memory",
			Value: fmt.Sprintf("every %d sessions opened, and before the case is measured", measure.ReleaseMemoryEvery),
			Why: fmt.Sprintf("auto: more than %d clients; garbage from opening sessions (go-zookeeper drops a 1.5 MiB "+
				"buffer per connection) would stay resident through the measured interval", measure.ReleaseMemoryFrom)})
	}
	if p.kind == backends.ZooKeeper {
		out = append(out, p.recvBufferSetting())
	}
	return out
}

// recvBufferSetting says how each ZooKeeper session's receive buffer was
// sized: for a listing of every client of a case under one node, or of the
// workload's backlog (listedChildren).
func (p *plan) recvBufferSetting() results.Setting {
	n, backlog := p.listedChildren()
	name := p.listedName()
	cfg := p.zkConfig(nil)
	buf := cfg.RecvBuffer()
	setting := func(why string) results.Setting {
		return results.Setting{Name: "zookeeper receive buffer", Value: fmt.Sprintf("%d bytes", buf), Why: why}
	}
	cfg.RecvBufferSize = 0
	if listing := cfg.RecvBuffer(); buf > listing {
		return setting(fmt.Sprintf("a session must receive the largest node data the %s workload reads "+
			"(%d bytes) with its reply's header, more than a listing needs (%d bytes)",
			p.wspec.Name, buf-replyOverhead, listing))
	}
	if backlog > 0 {
		why := fmt.Sprintf("a session must receive a listing of the %s workload's backlog, every item a case puts "+
			"(--rate x --duration: %d)", p.wspec.Name, backlog)
		if n < backlog {
			why += fmt.Sprintf(", cut to %d to stay within %d KiB, ZooKeeper's default jute.maxbuffer (its Java clients "+
				"refuse a larger reply): a listing of a longer backlog fails its take, counted as the case's error", n,
				maxBacklogBuffer>>10)
		}
		return setting(why)
	}
	switch {
	case name > 0:
		return setting(fmt.Sprintf("a session must receive a listing of every client of a case under one node (%d "+
			"names of %d bytes: 4 KiB + %d bytes a child)", n, name, 4+name))
	case buf == zkbackend.DefaultRecvBufferSize:
		return setting("auto: the default, which holds a listing of " + fmt.Sprint(n) + " children")
	}
	return setting(fmt.Sprintf("a session must receive a listing of every client of a case under one node (%d)", n))
}

func capNote(v time.Duration) string {
	if v == maxAutoTimeout {
		return fmt.Sprintf(", at most %v", maxAutoTimeout)
	}
	return ""
}

// AutoWarmup is what an Auto warm-up becomes for a run whose largest case
// has n clients: the default, or warmupPerClient a client when longer.
func AutoWarmup(n int) time.Duration { return max(defaultWarmup, time.Duration(n)*warmupPerClient) }
