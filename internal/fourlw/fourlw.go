// Package fourlw speaks ZooKeeper's four-letter words ("srvr", "mntr",
// "conf", ...): plain-text admin commands sent on the client port, answered
// and then closed by the server. It is shared by backends/zookeeper
// (preflight, metrics scraping) and cluster/zookeeper (readiness checks).
package fourlw

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// Errors returned by Query, checked with errors.Is.
var (
	// ErrUnreachable: nothing accepted a TCP connection at the endpoint.
	ErrUnreachable = errors.New("fourlw: endpoint unreachable")
	// ErrNotWhitelisted: the server refused the command because it is not in
	// 4lw.commands.whitelist.
	ErrNotWhitelisted = errors.New("fourlw: command not whitelisted")
	// ErrNotServing: the server is up but not serving yet ("This ZooKeeper
	// instance is not currently serving requests"), e.g. no quorum.
	ErrNotServing = errors.New("fourlw: server not serving requests")
	// ErrNoAnswer: the connection closed, or the deadline passed, without a
	// reply: the listener is probably not ZooKeeper.
	ErrNoAnswer = errors.New("fourlw: no answer")
)

// maxReply bounds a reply; mntr is about 30 KB on ZooKeeper 3.8.
const maxReply = 4 << 20

// Query sends cmd and a newline to the server at endpoint ("host:port"),
// as `echo cmd | nc host port` does, and returns its whole reply. It
// returns when the server closes the connection or ctx ends; without a
// deadline in ctx it gives up after 5 s. The newline makes an HTTP listener
// (etcd's client port) answer at once instead of waiting for more.
func Query(ctx context.Context, endpoint, cmd string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrUnreachable, endpoint, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	// Close the connection when ctx is cancelled (not only at its deadline).
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		return "", fmt.Errorf("%w: %s %s: %v", ErrNoAnswer, endpoint, cmd, err)
	}
	body, err := io.ReadAll(io.LimitReader(conn, maxReply))
	reply := string(body)
	if err != nil && reply == "" {
		if ctx.Err() != nil {
			return "", fmt.Errorf("%w: %s %s: %w", ErrNoAnswer, endpoint, cmd, ctx.Err())
		}
		return "", fmt.Errorf("%w: %s %s: %v", ErrNoAnswer, endpoint, cmd, err)
	}
	switch {
	case reply == "":
		return "", fmt.Errorf("%w: %s closed the connection after %q", ErrNoAnswer, endpoint, cmd)
	case strings.Contains(reply, "is not executed because it is not in the whitelist"):
		return "", fmt.Errorf("%w: %s: %s", ErrNotWhitelisted, endpoint, strings.TrimSpace(reply))
	case strings.HasPrefix(reply, "This ZooKeeper instance is not currently serving requests"):
		return "", fmt.Errorf("%w: %s", ErrNotServing, endpoint)
	}
	return reply, nil
}

// Srvr is the parsed reply to "srvr".
type Srvr struct {
	// Version is the first word of "Zookeeper version: ...", e.g.
	// "3.8.0-${mvngit.commit.id}," trimmed to "3.8.0".
	Version string
	// Mode is "standalone", "leader", "follower" or "observer".
	Mode string
	// Zxid is the last transaction id the server has seen.
	Zxid int64
	// Connections is the number of client connections the server holds.
	Connections int
}

// ParseSrvr parses a "srvr" reply. It fails if the text does not start with
// ZooKeeper's version line, which is how a non-ZooKeeper listener shows.
func ParseSrvr(reply string) (Srvr, error) {
	var s Srvr
	if !strings.HasPrefix(reply, "Zookeeper version:") {
		return s, fmt.Errorf("fourlw: not a srvr reply: %.60q", reply)
	}
	sc := bufio.NewScanner(strings.NewReader(reply))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Zookeeper version":
			s.Version = v
			if i := strings.IndexAny(v, "-, "); i > 0 {
				s.Version = v[:i]
			}
		case "Mode":
			s.Mode = v
		case "Zxid":
			s.Zxid, _ = strconv.ParseInt(strings.TrimPrefix(v, "0x"), 16, 64)
		case "Connections":
			s.Connections, _ = strconv.Atoi(v)
		}
	}
	return s, nil
}

// ParseConf parses a "conf" reply into key=value pairs.
func ParseConf(reply string) map[string]string {
	m := make(map[string]string)
	for _, line := range strings.Split(reply, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			m[k] = v
		}
	}
	return m
}

// ParseMntr parses a "mntr" reply (tab-separated name and value per line)
// into its numeric values; non-numeric values (zk_version,
// zk_server_state) are returned in text.
func ParseMntr(reply string) (nums map[string]float64, text map[string]string) {
	nums = make(map[string]float64)
	text = make(map[string]string)
	for _, line := range strings.Split(reply, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			nums[k] = f
		} else {
			text[k] = v
		}
	}
	return nums, text
}

// mntrGaugePrefixes start mntr's summaries other than their counts and
// sums: averages, minima, maxima and percentiles since the server started
// (or its statistics were last reset). None of them is a counter.
var mntrGaugePrefixes = []string{"zk_avg_", "zk_min_", "zk_max_", "zk_p50_", "zk_p95_", "zk_p99_", "zk_p999_"}

// mntrGauges are mntr's instantaneous values: state now, not a count of
// events (ZooKeeper 3.8.0, standalone and ensemble leader).
var mntrGauges = map[string]bool{
	"zk_ephemerals_count": true, "zk_num_alive_connections": true, "zk_outstanding_requests": true,
	"zk_znode_count": true, "zk_watch_count": true, "zk_approximate_data_size": true,
	"zk_global_sessions": true, "zk_local_sessions": true,
	"zk_non_mtls_remote_conn_count": true, "zk_non_mtls_local_conn_count": true,
	"zk_last_client_response_size": true, "zk_connection_drop_probability": true,
	"zk_open_file_descriptor_count": true, "zk_outstanding_tls_handshake": true,
	"zk_followers": true, "zk_synced_followers": true, "zk_synced_non_voting_followers": true,
	"zk_synced_observers": true, "zk_learners": true, "zk_pending_syncs": true, "zk_last_proposal_size": true,
	"zk_quorum_size": true,
}

// MntrGauge reports whether the mntr figure name is a gauge, an average,
// a minimum, a maximum or a percentile rather than a counter: a difference
// of two readings of it means nothing. Everything else in mntr counts up
// (zk_packets_received, zk_cnt_*, zk_sum_*, zk_bytes_received_count,
// zk_watch_bytes: the notifications' bytes, 0 to 158,600 over 2,600
// notifications with no watch left at the end, ...); zk_uptime counts
// milliseconds.
func MntrGauge(name string) bool {
	if mntrGauges[name] {
		return true
	}
	for _, p := range mntrGaugePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
