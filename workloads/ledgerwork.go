package workloads

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// The ledger's protected store, the work a holder does in it, and the
// variants of that work. The store lives in the case's namespace, on the
// servers the lock runs on, under <namespace>/ledger:
//
//	acct-1 .. acct-K  "<balance> <op> <token>": each operation adds 1 to
//	                  every account, one account a step; op and token name
//	                  the operation and the grant that wrote it last
//	head              "<committed> <op> <token>": the count of committed
//	                  operations and the last one; the commit step
//	intent            (idempotent) "pending|done <op> <token>": the
//	                  operation under way, written before its first step
//
// An operation is K steps (one account each) and a commit: K+1 writes, so
// that a crash between two of them leaves the store part-done. In a whole
// store every balance equals the committed count.
//
// naive: each step reads its account and writes balance+1; the commit
// reads head and writes committed+1. Nothing records the operation under
// way: after a crash its applied steps stay, the next holder starts its own
// operation on top of them, and the accounts no longer match the count.
//
// idempotent: the holder reads the intent (one with a newer token than its
// own means the lock has passed on: rejected as step 1) and writes its own
// first; each step reads its
// account and writes it only if the account's op is not this operation (a
// replay is a no-op) and its token is not newer than the holder's (a newer
// one means the lock has passed on: the fence rejects the holder, which
// stops); the commit writes head unless head already names the operation,
// then marks the intent done. A holder that finds a pending intent first
// completes that operation — the steps its crashed owner applied are
// replayed as no-ops — then does its own. The fence's check and write are
// two requests: a holder that stops between them still writes.
//
// txn (etcd): the holder reads head and every account, and writes all K
// accounts and head in one transaction guarded by head's value. A holder
// whose lock passed on is rejected: before the transaction if head names a
// newer token than its own, by the guard if head moved after its read. A
// crash before the transaction leaves nothing written; nothing is ever
// part-done.

// The work variants (the ledger workload's variants).
const (
	WorkNaive      = "naive"
	WorkIdempotent = "idempotent"
	WorkTxn        = "txn"
)

// Step outcomes (lockEvent.Outcome of an evStep).
const (
	stepApplied  = "applied"  // the step's write was made
	stepReplayed = "replayed" // the step was done already: a no-op
	stepStaged   = "staged"   // read, to be written by the commit's transaction
	stepRejected = "rejected" // the fence refused it: the holder's lock had passed on
)

// workTimeout bounds one critical section's work; a case that ends meanwhile
// lets it finish on a fresh context within this bound.
const workTimeout = 20 * time.Second

// WorkSpec is the work a ledger holder does, as a worker process is told.
type WorkSpec struct {
	Variant string        `json:"variant"`
	Steps   int           `json:"steps"`
	Store   string        `json:"store"`
	Pause   time.Duration `json:"pause_ns"` // after each step
}

// accountPath is account s (1..K) of the store at store.
func accountPath(store string, s int) string { return store + "/acct-" + strconv.Itoa(s) }

func headPath(store string) string   { return store + "/head" }
func intentPath(store string) string { return store + "/intent" }

// storeRecord is one node of the store: a count (balance or committed
// operations), the operation and the token that wrote it; for the intent,
// Count is 1 while pending and 0 once done.
type storeRecord struct {
	Count int64
	Op    string
	Token int64
}

func (r storeRecord) encode() []byte {
	return []byte(fmt.Sprintf("%d %s %d", r.Count, r.Op, r.Token))
}

func encodeIntent(pending bool, op string, token int64) []byte {
	state := "done"
	if pending {
		state = "pending"
	}
	return []byte(fmt.Sprintf("%s %s %d", state, op, token))
}

// errStoreData: a store node holds data the work did not write.
var errStoreData = errors.New("workloads: ledger store data")

func decodeRecord(b []byte) (storeRecord, error) {
	f := strings.Fields(string(b))
	if len(f) == 3 && (f[0] == "pending" || f[0] == "done") {
		tok, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return storeRecord{}, fmt.Errorf("%w: %q", errStoreData, b)
		}
		var n int64
		if f[0] == "pending" {
			n = 1
		}
		return storeRecord{Count: n, Op: f[1], Token: tok}, nil
	}
	if len(f) != 3 {
		return storeRecord{}, fmt.Errorf("%w: %q", errStoreData, b)
	}
	n, err1 := strconv.ParseInt(f[0], 10, 64)
	tok, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return storeRecord{}, fmt.Errorf("%w: %q", errStoreData, b)
	}
	return storeRecord{Count: n, Op: f[1], Token: tok}, nil
}

// ledgerWork is one holder's work, the same in this process and in a worker
// process: it counts its own requests and payload bytes (so that a worker's
// count reaches the parent), and reports each step and commit as events.
type ledgerWork struct {
	spec   WorkSpec
	s      backends.Session
	client int
	seq    int // this client's operations so far: op ids are "<client>.<seq>"
	now    func() time.Duration
	ready  bool // the store's parent is made (ZooKeeper needs it)

	reqs, bytes int64 // since the last commit or abort event
}

// errRejected: the fence refused a step or a commit.
var errRejected = errors.New("rejected by the fence: the lock has passed on")

func (w *ledgerWork) get(ctx context.Context, p string) (storeRecord, []byte, bool, error) {
	w.reqs++
	w.bytes += int64(len(p))
	data, _, err := w.s.Get(ctx, p)
	if errors.Is(err, backends.ErrNoNode) {
		return storeRecord{}, nil, false, nil
	}
	if err != nil {
		return storeRecord{}, nil, false, err
	}
	w.bytes += int64(len(data))
	r, err := decodeRecord(data)
	return r, data, true, err
}

func (w *ledgerWork) set(ctx context.Context, p string, data []byte) error {
	w.reqs++
	w.bytes += int64(len(p) + len(data))
	return w.s.Set(ctx, p, data)
}

// section does the critical section's work for the grant with token: its
// events go to sink. A store error ends the work with an abort event (the
// loop goes on to release); only the sink's error is returned.
func (w *ledgerWork) section(ctx context.Context, token int64, sink lockSink) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), workTimeout)
	defer cancel()
	w.seq++
	op := fmt.Sprintf("%d.%d", w.client, w.seq)
	var err error
	if !w.ready {
		if err = w.s.EnsurePath(wctx, w.spec.Store); err == nil {
			w.ready = true
		}
	}
	switch {
	case err != nil:
	case w.spec.Variant == WorkIdempotent:
		err = w.idempotent(wctx, ctx, op, token, sink)
	case w.spec.Variant == WorkTxn:
		err = w.txn(wctx, ctx, op, token, sink)
	default:
		err = w.naive(wctx, ctx, op, token, sink)
	}
	var se sinkError
	if errors.As(err, &se) {
		return se.err
	}
	if err != nil {
		return w.emit(sink, lockEvent{Kind: evAbort, Op: op, Token: token, Err: err})
	}
	return nil
}

// sinkError carries the sink's error out of the work, to end the loop.
type sinkError struct{ err error }

func (e sinkError) Error() string { return e.err.Error() }

// emit sends ev with the time and, for a commit or an abort, the requests
// and bytes spent since the last one.
func (w *ledgerWork) emit(sink lockSink, ev lockEvent) error {
	ev.At = w.now()
	if ev.Kind == evCommit || ev.Kind == evAbort {
		ev.Reqs, ev.Bytes = w.reqs, w.bytes
		w.reqs, w.bytes = 0, 0
	}
	if err := sink.event(ev); err != nil {
		return sinkError{err}
	}
	return nil
}

// step reports step s of op and pauses (unless the case is ending: stop).
func (w *ledgerWork) step(stop context.Context, sink lockSink, op string, s int, token int64, outcome string) error {
	if err := w.emit(sink, lockEvent{Kind: evStep, Op: op, Step: s, Token: token, Outcome: outcome}); err != nil {
		return err
	}
	if w.spec.Pause > 0 {
		sleepCtx(stop, w.spec.Pause)
	}
	return nil
}

func (w *ledgerWork) naive(ctx, stop context.Context, op string, token int64, sink lockSink) error {
	for s := 1; s <= w.spec.Steps; s++ {
		p := accountPath(w.spec.Store, s)
		r, _, _, err := w.get(ctx, p)
		if err != nil {
			return err
		}
		if err := w.set(ctx, p, storeRecord{Count: r.Count + 1, Op: op, Token: token}.encode()); err != nil {
			return err
		}
		if err := w.step(stop, sink, op, s, token, stepApplied); err != nil {
			return err
		}
	}
	h, _, _, err := w.get(ctx, headPath(w.spec.Store))
	if err != nil {
		return err
	}
	if err := w.set(ctx, headPath(w.spec.Store), storeRecord{Count: h.Count + 1, Op: op, Token: token}.encode()); err != nil {
		return err
	}
	return w.emit(sink, lockEvent{Kind: evCommit, Op: op, Token: token})
}

func (w *ledgerWork) idempotent(ctx, stop context.Context, op string, token int64, sink lockSink) error {
	in, _, found, err := w.get(ctx, intentPath(w.spec.Store))
	if err != nil {
		return err
	}
	if found && in.Token > token {
		// The fence at the intent: a newer holder's operation is there.
		return w.reject(sink, op, 1, token)
	}
	if found && in.Count == 1 {
		// A holder before this one crashed mid-operation: finish it.
		if err := w.apply(ctx, stop, in.Op, token, sink, true); err != nil {
			return err
		}
	}
	if err := w.set(ctx, intentPath(w.spec.Store), encodeIntent(true, op, token)); err != nil {
		return err
	}
	return w.apply(ctx, stop, op, token, sink, false)
}

// apply does every step of op that is not done yet and commits it, once:
// the idempotent work, for its own operation or one it recovers.
func (w *ledgerWork) apply(ctx, stop context.Context, op string, token int64, sink lockSink, recovered bool) error {
	reject := func(s int) error { return w.reject(sink, op, s, token) }
	for s := 1; s <= w.spec.Steps; s++ {
		p := accountPath(w.spec.Store, s)
		r, _, _, err := w.get(ctx, p)
		if err != nil {
			return err
		}
		outcome := stepReplayed
		switch {
		case r.Token > token:
			return reject(s)
		case r.Op != op:
			if err := w.set(ctx, p, storeRecord{Count: r.Count + 1, Op: op, Token: token}.encode()); err != nil {
				return err
			}
			outcome = stepApplied
		}
		if err := w.step(stop, sink, op, s, token, outcome); err != nil {
			return err
		}
	}
	h, _, _, err := w.get(ctx, headPath(w.spec.Store))
	if err != nil {
		return err
	}
	switch {
	case h.Token > token:
		return reject(w.spec.Steps + 1)
	case h.Op != op:
		if err := w.set(ctx, headPath(w.spec.Store), storeRecord{Count: h.Count + 1, Op: op, Token: token}.encode()); err != nil {
			return err
		}
	}
	if err := w.set(ctx, intentPath(w.spec.Store), encodeIntent(false, op, token)); err != nil {
		return err
	}
	return w.emit(sink, lockEvent{Kind: evCommit, Op: op, Token: token, Recovered: recovered})
}

// reject reports step s of op refused by the fence and returns errRejected.
func (w *ledgerWork) reject(sink lockSink, op string, s int, token int64) error {
	if err := w.emit(sink, lockEvent{Kind: evStep, Op: op, Step: s, Token: token, Outcome: stepRejected}); err != nil {
		return err
	}
	return errRejected
}

// errNoTransactions: the txn work on a session that cannot do it.
var errNoTransactions = errors.New("workloads: this backend's sessions cannot write several nodes in one transaction")

func (w *ledgerWork) txn(ctx, stop context.Context, op string, token int64, sink lockSink) error {
	// The instrument forwards SetIf (counted as one write); a session
	// beneath it that cannot do it answers errors.ErrUnsupported.
	tx, ok := w.s.(backends.Transactor)
	if !ok {
		return errNoTransactions
	}
	h, raw, _, err := w.get(ctx, headPath(w.spec.Store))
	if err != nil {
		return err
	}
	if h.Token > token {
		// A newer holder committed: this one's lock has passed on.
		return w.reject(sink, op, w.spec.Steps+1, token)
	}
	writes := make([]backends.Write, 0, w.spec.Steps+1)
	for s := 1; s <= w.spec.Steps; s++ {
		p := accountPath(w.spec.Store, s)
		r, _, _, err := w.get(ctx, p)
		if err != nil {
			return err
		}
		writes = append(writes, backends.Write{Path: p, Data: storeRecord{Count: r.Count + 1, Op: op, Token: token}.encode()})
		if err := w.step(stop, sink, op, s, token, stepStaged); err != nil {
			return err
		}
	}
	writes = append(writes, backends.Write{Path: headPath(w.spec.Store), Data: storeRecord{Count: h.Count + 1, Op: op, Token: token}.encode()})
	w.reqs++
	w.bytes += int64(len(headPath(w.spec.Store)) + len(raw))
	for _, wr := range writes {
		w.bytes += int64(len(wr.Path) + len(wr.Data))
	}
	done, err := tx.SetIf(ctx, headPath(w.spec.Store), raw, writes)
	if err != nil {
		return err
	}
	if !done {
		if err := w.emit(sink, lockEvent{Kind: evStep, Op: op, Step: w.spec.Steps + 1, Token: token, Outcome: stepRejected}); err != nil {
			return err
		}
		return errRejected
	}
	return w.emit(sink, lockEvent{Kind: evCommit, Op: op, Token: token})
}
