package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseValid(t *testing.T) {
	none := Fault{Server: -1, Client: -1}
	with := func(f func(*Fault)) Fault {
		x := none
		f(&x)
		return x
	}
	tests := []struct {
		spec string
		want Fault
	}{
		{"kill-server:1@10s", with(func(f *Fault) { f.Action, f.Server, f.At = KillServer, 1, 10*time.Second })},
		{"kill-server:0@1m30s+15s", with(func(f *Fault) {
			f.Action, f.Server, f.At, f.For = KillServer, 0, 90*time.Second, 15*time.Second
		})},
		{"kill-leader@10s", with(func(f *Fault) { f.Action, f.At = KillLeader, 10*time.Second })},
		{"kill-leader@0s+2.5s", with(func(f *Fault) { f.Action, f.For = KillLeader, 2500*time.Millisecond })},
		{"restart-server:2@20s", with(func(f *Fault) { f.Action, f.Server, f.At = RestartServer, 2, 20*time.Second })},
		{"kill-servers:2@10s+15s", with(func(f *Fault) {
			f.Action, f.Count, f.At, f.For = KillServers, 2, 10*time.Second, 15*time.Second
		})},
		{"pause-server:1@3s+500ms", with(func(f *Fault) {
			f.Action, f.Server, f.At, f.For = PauseServer, 1, 3*time.Second, 500*time.Millisecond
		})},
		{"latency:50ms±20ms@5s+10s", with(func(f *Fault) {
			f.Action, f.Base, f.Jitter, f.At, f.For = Latency, 50*time.Millisecond, 20*time.Millisecond, 5*time.Second, 10*time.Second
		})},
		{"latency:50ms~20ms@5s", with(func(f *Fault) {
			f.Action, f.Base, f.Jitter, f.At = Latency, 50*time.Millisecond, 20*time.Millisecond, 5*time.Second
		})},
		{"latency:1ms@0s", with(func(f *Fault) { f.Action, f.Base = Latency, time.Millisecond })},
		{"cut-client:3@5s+8s", with(func(f *Fault) {
			f.Action, f.Client, f.At, f.For = CutClient, 3, 5*time.Second, 8*time.Second
		})},
		{"cut-all@5s+1s", with(func(f *Fault) { f.Action, f.At, f.For = CutAll, 5*time.Second, time.Second })},
		{"reset-conns@12s", with(func(f *Fault) { f.Action, f.At = ResetConns, 12*time.Second })},
		{"reset-conns:4@12s", with(func(f *Fault) { f.Action, f.Client, f.At = ResetConns, 4, 12*time.Second })},
		{"pause-client:3@5s+10s", with(func(f *Fault) {
			f.Action, f.Client, f.At, f.For = PauseClient, 3, 5*time.Second, 10*time.Second
		})},
		{"expire-session:3@5s", with(func(f *Fault) { f.Action, f.Client, f.At = ExpireSession, 3, 5*time.Second })},
		{"kill-client:2@3s", with(func(f *Fault) { f.Action, f.Client, f.At = KillClient, 2, 3*time.Second })},
		{"kill-holder@1500ms", with(func(f *Fault) { f.Action, f.At = KillHolder, 1500*time.Millisecond })},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Parse = %+v, want %+v", got, tt.want)
			}
			again, err := Parse(got.String())
			if err != nil || again != got {
				t.Fatalf("Parse(String()=%q) = %+v, %v; want %+v", got.String(), again, err, got)
			}
		})
	}
}

func TestParseErrorsSayWhatIsWrong(t *testing.T) {
	tests := []struct {
		spec string
		want []string // substrings of the error
	}{
		{"", []string{"empty", "ACTION[:ARG]@AT[+FOR]"}},
		{"kill-server:1", []string{"missing @AT"}},
		{"kill-server:1 @10s", []string{"white space"}},
		{"kill-serve:1@10s", []string{`"kill-serve"`, "unknown action", "kill-server", "expire-session"}},
		{"kill-server@10s", []string{"needs a server index", "kill-server:I@AT[+FOR]"}},
		{"kill-server:x@10s", []string{`"x"`, "server index", "not a non-negative whole number"}},
		{"kill-server:-1@10s", []string{`"-1"`, "not a non-negative"}},
		{"kill-server:+1@10s", []string{`"+1"`}},
		{"kill-server:99999999999@10s", []string{"larger than"}},
		{"kill-leader:1@10s", []string{`"1"`, "takes no argument", "kill-leader@AT[+FOR]"}},
		{"kill-servers:0@10s", []string{"at least 1"}},
		{"kill-server:1@10", []string{`"10"`, "AT", "unit"}},
		{"kill-server:1@-5s", []string{`"-5s"`, "must start with a digit"}},
		{"kill-server:1@", []string{"AT is empty"}},
		{"kill-server:1@10s+", []string{"FOR is empty"}},
		{"kill-server:1@10s++5s", []string{`"+5s"`, "must start with a digit"}},
		{"kill-server:1@10s+0s", []string{"longer than 0"}},
		{"kill-server:1@10s@5s", []string{"more than one '@'"}},
		{"kill-server:1@200h", []string{"longer than 168h"}},
		{"restart-server:1@10s+5s", []string{`"+5s"`, "instant", "restart-server:I@AT"}},
		{"reset-conns@1s+1s", []string{"instant"}},
		{"expire-session:1@1s+1s", []string{"instant"}},
		{"pause-client:3@5s", []string{"needs +FOR", "pause-client:C@AT+FOR"}},
		{"pause-server:0@5s", []string{"needs +FOR"}},
		{"latency@5s", []string{"latency needs a delay", "50ms±20ms"}},
		{"latency:@5s", []string{"latency needs a delay"}},
		{"latency:0s@5s", []string{"BASE must be longer than 0"}},
		{"latency:10ms±20ms@5s", []string{"JITTER 20ms must not exceed BASE 10ms"}},
		{"latency:10ms±x@5s", []string{`"10ms±x"`, "JITTER must start with a digit"}},
		{"latency:10ms±1x@5s", []string{"JITTER is not a duration"}},
		{"latency:fast@5s", []string{"BASE must start with a digit"}},
		{"cut-client@5s", []string{"needs a client index"}},
		{"kill-client@5s", []string{"needs a client index", "kill-client:C@AT"}},
		{"kill-client:1@5s+1s", []string{"instant", "kill-client:C@AT"}},
		{"kill-holder:1@5s", []string{"takes no argument", "kill-holder@AT"}},
		{"kill-holder@5s+1s", []string{"instant"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			f, err := Parse(tt.spec)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tt.spec, f)
			}
			if !errors.Is(err, ErrBadSpec) {
				t.Fatalf("error %v does not wrap ErrBadSpec", err)
			}
			var se *SpecError
			if !errors.As(err, &se) || se.Spec != tt.spec {
				t.Fatalf("error %v is not a SpecError for %q", err, tt.spec)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestParseAllSplitsSortsAndJoinsErrors(t *testing.T) {
	fs, err := ParseAll([]string{"restart-server:1@20s,kill-server:1@10s", "latency:5ms@0s+1s"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, f.String())
	}
	if want := "latency:5ms@0s+1s kill-server:1@10s restart-server:1@20s"; strings.Join(got, " ") != want {
		t.Fatalf("ParseAll = %v, want %s", got, want)
	}
	_, err = ParseAll([]string{"bogus@1s,kill-server@1s", "cut-all@1s"})
	if err == nil || !strings.Contains(err.Error(), `"bogus"`) || !strings.Contains(err.Error(), "needs a server index") {
		t.Fatalf("ParseAll errors = %v, want both problems", err)
	}
}

func TestValidateAgainstLimits(t *testing.T) {
	lim := Limits{Servers: 3, Clients: 4, Network: true}
	fs, err := ParseAll([]string{
		"kill-server:3@1s",        // no server 3
		"kill-servers:4@1s",       // only 3
		"cut-client:4@1s",         // no client 4
		"pause-client:0@1s+1s",    // no workers
		"expire-session:1@1s",     // cannot expire
		"kill-server:2@1s",        // fine
		"latency:1ms±1ms@1s+1s",   // fine
		"reset-conns:3@2s",        // fine
		"kill-servers:3@1s+1s",    // fine: total outage is allowed
		"restart-server:0@5s",     // fine
		"kill-leader@1s+1s",       // fine
		"pause-server:1@1s+100ms", // fine
	})
	if err != nil {
		t.Fatal(err)
	}
	err = Validate(fs, lim)
	if !errors.Is(err, ErrBadSpec) {
		t.Fatalf("Validate = %v, want ErrBadSpec", err)
	}
	msg := err.Error()
	for _, w := range []string{
		`"kill-server:3@1s": "3": no such server: the cluster has servers 0..2`,
		`"kill-servers:4@1s": "4": the cluster has only 3 servers`,
		`"cut-client:4@1s": "4": no such client: the run has clients 0..3`,
		`"pause-client:0@1s+1s": needs clients running in worker processes`,
		`"expire-session:1@1s": this backend cannot expire`,
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("Validate error lacks %q:\n%s", w, msg)
		}
	}
	if n := strings.Count(msg, "\n") + 1; n != 5 {
		t.Errorf("Validate found %d problems, want 5:\n%s", n, msg)
	}
	if err := Validate(fs[5:], lim); err != nil {
		t.Fatalf("valid faults rejected: %v", err)
	}
	remote := Limits{Clients: 4}
	if err := Validate([]Fault{fs[5]}, remote); err == nil || !strings.Contains(err.Error(), "remote server cannot be killed") {
		t.Fatalf("kill-server on a remote cluster: %v", err)
	}
	if err := Validate([]Fault{fs[6]}, remote); err == nil || !strings.Contains(err.Error(), "fault proxy") {
		t.Fatalf("latency without proxies: %v", err)
	}
}

// TestValidateCluster: before the servers start, the faults the cluster
// cannot take and the clients that do not exist are refused; what only the
// target knows (proxies, workers, expiry) is left to Validate.
func TestValidateCluster(t *testing.T) {
	fs, err := ParseAll([]string{
		"kill-server:3@1s",       // no server 3
		"partition-leader@1s+1s", // no network zkbench controls
		"cut-client:4@1s",        // no client 4
		"pause-client:0@1s+1s",   // workers: not known yet
		"expire-session:1@1s",    // expiry: not known yet
		"kill-holder@2s",         // kills: not known yet
		"latency:1ms@1s+1s",      // proxies: not known yet
		"kill-leader@1s",         // fine
	})
	if err != nil {
		t.Fatal(err)
	}
	err = ValidateCluster(fs, Limits{Servers: 3, Clients: 4})
	if !errors.Is(err, ErrBadSpec) {
		t.Fatalf("ValidateCluster = %v, want ErrBadSpec", err)
	}
	msg := err.Error()
	for _, w := range []string{
		`"kill-server:3@1s": "3": no such server`,
		`"partition-leader@1s+1s": needs servers on a network zkbench controls`,
		`"cut-client:4@1s": "4": no such client`,
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("ValidateCluster error lacks %q:\n%s", w, msg)
		}
	}
	if n := strings.Count(msg, "\n") + 1; n != 3 {
		t.Errorf("ValidateCluster found %d problems, want 3:\n%s", n, msg)
	}
	later, err := ParseAll([]string{"pause-client:0@1s+1s", "expire-session:1@1s", "kill-holder@2s", "latency:1ms@1s+1s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateCluster(later, Limits{Clients: 4}); err != nil {
		t.Errorf("faults only the target can judge, refused early: %v", err)
	}
	if err := ValidateCluster(append(later, fs...), Limits{Clients: 4}); err == nil || !strings.Contains(err.Error(), `"kill-leader@1s": needs server processes`) {
		t.Errorf("kill-leader on no local servers: %v", err)
	}
}

// TestValidateKills: kill-client needs worker processes and a client that
// exists; kill-holder needs worker processes and holders that work in
// steps.
func TestValidateKills(t *testing.T) {
	fs, err := ParseAll([]string{"kill-client:1@1s", "kill-holder@2s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		lim  Limits
		fs   []Fault
		want []string // "" for none
	}{
		{"no workers", Limits{Clients: 4}, fs, []string{`"kill-client:1@1s": needs clients running in worker processes`,
			`"kill-holder@2s": needs clients running in worker processes`}},
		{"no steps", Limits{Clients: 4, Kill: true}, fs[1:], []string{`"kill-holder@2s": needs a workload whose lock holders work in steps`}},
		{"no such client", Limits{Clients: 1, Kill: true, Holders: true}, fs[:1], []string{`"kill-client:1@1s": "1": no such client: the run has clients 0..0`}},
		{"fine", Limits{Clients: 4, Kill: true, Holders: true}, fs, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.fs, tt.lim)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrBadSpec) {
				t.Fatalf("Validate = %v, want ErrBadSpec", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"kill-server:1@10s", "kill-leader@10s+5s", "restart-server:1@20s", "kill-servers:2@10s+15s",
		"latency:50ms±20ms@5s+10s", "latency:50ms~20ms@5s", "cut-client:3@5s+8s", "reset-conns@12s",
		"reset-conns:2@1s", "pause-client:3@5s+10s", "expire-session:3@5s", "cut-all@1h+1m",
		"pause-server:0@0s+1ns", "kill-server:1@10s@", "latency:±@+", "", "kill-client:0@1s", "kill-holder@2s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		got, err := Parse(spec)
		if err != nil {
			if !errors.Is(err, ErrBadSpec) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrBadSpec", spec, err)
			}
			return
		}
		if _, ok := rules[got.Action]; !ok {
			t.Fatalf("Parse(%q) = unknown action %q", spec, got.Action)
		}
		if got.At < 0 || got.At > maxTime || got.For < 0 || got.For > maxTime || got.Jitter > got.Base {
			t.Fatalf("Parse(%q) = %+v: out of range", spec, got)
		}
		canon := got.String()
		again, err := Parse(canon)
		if err != nil {
			t.Fatalf("Parse(%q) ok, but its canonical form %q fails: %v", spec, canon, err)
		}
		if again != got {
			t.Fatalf("round trip %q -> %+v -> %q -> %+v", spec, got, canon, again)
		}
		if again.String() != canon {
			t.Fatalf("canonical form not stable: %q -> %q", canon, again.String())
		}
	})
}
