package etcd

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// What answered at an endpoint, judged from raw bytes before any gRPC call,
// so Preflight can name the problem instead of timing out.
type sniffKind int

const (
	sniffUnknown   sniffKind = iota // no verdict: let the gRPC Status decide
	sniffEtcd                       // GET /version named etcdserver
	sniffOtherHTTP                  // an HTTP server, not obviously etcd
	sniffZooKeeper                  // answered the "srvr" four-letter word
	sniffNotEtcd                    // closed the connection, or not HTTP
	sniffWantsTLS                   // a TLS server, and we speak plaintext
	sniffPlaintext                  // a plaintext server, and we speak TLS
	sniffTLSFailed                  // TLS handshake failed (certificate...)
)

type verdict struct {
	kind   sniffKind
	detail string
}

// definite reports verdicts that end Preflight without a gRPC call.
func (v verdict) definite() bool { return v.kind >= sniffZooKeeper }

func (v verdict) message(ep string) string {
	switch v.kind {
	case sniffZooKeeper:
		return fmt.Sprintf("%s does not speak etcd's gRPC API; it answers like ZooKeeper (%q): use --backend zookeeper", ep, v.detail)
	case sniffNotEtcd:
		return fmt.Sprintf("%s does not speak etcd's gRPC API (%s); is it ZooKeeper? use --backend zookeeper; or does it want TLS? use https://", ep, v.detail)
	case sniffWantsTLS:
		return fmt.Sprintf("%s wants TLS (%s): use an https:// endpoint or the TLS settings", ep, v.detail)
	case sniffPlaintext:
		return fmt.Sprintf("%s does not speak TLS (%s): use http:// and drop the TLS settings", ep, v.detail)
	case sniffTLSFailed:
		return fmt.Sprintf("TLS with %s failed: %s: check the CA file, server name and client certificate", ep, v.detail)
	}
	return fmt.Sprintf("%s: %s", ep, v.detail)
}

// hint is appended to a failed gRPC call's error.
func (v verdict) hint() string {
	if v.kind == sniffEtcd || v.detail == "" {
		return ""
	}
	return " (" + v.detail + "; is it etcd's client port?)"
}

// sniff sends GET /version over plaintext or TLS (as the config says) and
// reads the first bytes of the answer, within one second. On a closed or
// non-HTTP answer it asks "srvr" to recognise ZooKeeper.
func (b *Backend) sniff(ctx context.Context, e endpoint) verdict {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", e.host)
	if err != nil {
		return verdict{sniffUnknown, err.Error()}
	}
	defer raw.Close()
	if dl, ok := ctx.Deadline(); ok {
		raw.SetDeadline(dl)
	}
	conn := raw
	if b.tls != nil {
		cfg := b.tls.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(e.host)
		}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			var rh tls.RecordHeaderError
			var cv *tls.CertificateVerificationError
			switch {
			case isTimeout(err) || ctx.Err() != nil:
				return verdict{sniffUnknown, "no TLS handshake within 1s"}
			case errors.As(err, &cv):
				return verdict{sniffTLSFailed, err.Error()}
			case errors.As(err, &rh), errors.Is(err, io.EOF):
				if zk := askZooKeeper(ctx, e.host); zk != "" {
					return verdict{sniffZooKeeper, zk}
				}
				return verdict{sniffPlaintext, err.Error()}
			}
			return verdict{sniffTLSFailed, err.Error()}
		}
		conn = tc
	}
	fmt.Fprintf(conn, "GET /version HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", e.host)
	buf := make([]byte, 1024)
	n, err := io.ReadAtLeast(conn, buf, 1)
	got := buf[:n]
	switch {
	case n == 0 && isTimeout(err):
		return verdict{sniffUnknown, "it accepted a connection but did not answer an HTTP request within 1s"}
	case n == 0:
		if zk := askZooKeeper(ctx, e.host); zk != "" {
			return verdict{sniffZooKeeper, zk}
		}
		return verdict{sniffNotEtcd, fmt.Sprintf("it closed the connection on an HTTP request: %v", err)}
	case b.tls == nil && got[0] == 0x15: // TLS alert record
		return verdict{sniffWantsTLS, "it answered plaintext with a TLS alert"}
	case bytes.Contains(got, []byte("HTTPS server")):
		return verdict{sniffWantsTLS, strings.TrimSpace(string(got))}
	case !bytes.HasPrefix(got, []byte("HTTP/")):
		if zk := askZooKeeper(ctx, e.host); zk != "" {
			return verdict{sniffZooKeeper, zk}
		}
		return verdict{sniffNotEtcd, fmt.Sprintf("it answered an HTTP request with %q", got[:min(n, 32)])}
	}
	// Read the rest of a short reply: the body may come in a second packet.
	for n < len(buf) && !bytes.Contains(buf[:n], []byte("etcdserver")) {
		m, err := conn.Read(buf[n:])
		n += m
		if err != nil {
			break
		}
	}
	if bytes.Contains(buf[:n], []byte("etcdserver")) {
		return verdict{sniffEtcd, ""}
	}
	return verdict{sniffOtherHTTP, "it answers HTTP, but GET /version does not name etcdserver"}
}

// askZooKeeper sends ZooKeeper's "srvr" four-letter word and returns the
// first line of a ZooKeeper-like answer, or "".
func askZooKeeper(ctx context.Context, host string) string {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return ""
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, "srvr"); err != nil {
		return ""
	}
	buf := make([]byte, 512)
	n, _ := io.ReadAtLeast(c, buf, 16)
	s := string(buf[:n])
	if strings.Contains(s, "Zookeeper version") || strings.Contains(s, "whitelist") {
		line, _, _ := strings.Cut(s, "\n")
		return strings.TrimSpace(line)
	}
	return ""
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
