package workloads

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/results"
)

func TestPaperBarrierGrid(t *testing.T) {
	cells, err := PaperBarrierGrid(0.1)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 12 || cells[0] != (PaperCell{Clients: 5, Barriers: 20}) || cells[11] != (PaperCell{Clients: 20, Barriers: 160}) {
		t.Fatalf("grid at 0.1: %v", cells)
	}
	full, _ := PaperBarrierGrid(1)
	if full[11] != (PaperCell{Clients: 200, Barriers: 1600}) {
		t.Fatalf("full grid ends with %v", full[11])
	}
	tiny, _ := PaperBarrierGrid(0.001)
	if len(tiny) != 2 || tiny[0] != (PaperCell{Clients: 2, Barriers: 1}) || tiny[1] != (PaperCell{Clients: 2, Barriers: 2}) {
		t.Fatalf("tiny grid %v: want the floors, duplicates removed: 2 clients x 1 and 2 barriers", tiny)
	}
	for _, bad := range []float64{0, -1, 1.5} {
		if _, err := PaperBarrierGrid(bad); err == nil {
			t.Errorf("scale %v accepted", bad)
		}
	}
}

func TestWritePaperBarrierTable(t *testing.T) {
	res := func(clients int, barriers int64, secs float64, enter float64, done int64) results.Result {
		return results.Result{Workload: "barrier", Backend: "zookeeper", Variant: "fair", Clients: clients,
			Ops:       results.Ops{Issued: barriers, Succeeded: done},
			StoppedBy: StoppedByOps, Elapsed: time.Duration(secs * float64(time.Second)),
			PerOp: map[string]float64{"requests_per_enter": enter, "requests_per_leave": 4, "server_requests_per_participant": 9}}
	}
	rs := []results.Result{
		res(5, 20, 1.0, 4.0, 20), res(5, 20, 3.0, 5.0, 20), // two repeats: mean 2.00
		res(10, 20, 4.5, 4.0, 20),
		res(5, 40, 6.0, 4.0, 39), // one round did not finish
	}
	var out bytes.Buffer
	if err := WritePaperBarrierTable(&out, rs); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"zookeeper fair", "5 clients", "10 clients", "2.00", "4.50", "6.00*", "4.5 / 4.0, 9.0"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	lines := strings.Split(got, "\n")
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "40") && !strings.Contains(l, "-") {
			t.Errorf("row 40 should show - for 10 clients: %q", l)
		}
	}
}
