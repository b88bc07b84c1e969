package etcd

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/zkbench/zkbench/backends"
)

// Witness counts, over every client the backend made, the server work
// the sessions' calls cause beyond what the instrument counts: read-only
// transactions (etcd counts every Txn as a write), lease grants and
// revokes (writes too), and the watch events that reached the client on
// the wire, which etcd counts as it sends them (mvcc ReportEventReceived)
// whether or not a watch still wanted them.
func (b *Backend) Witness() backends.Witness { return b.witness.Witness() }

var _ backends.Witnesser = (*Backend)(nil)

// witnessDialOptions count the calls and the watch events of a client.
func (b *Backend) witnessDialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(b.countCall),
		grpc.WithChainStreamInterceptor(b.countWatchEvents),
	}
}

func (b *Backend) countCall(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	switch method {
	case pb.Lease_LeaseGrant_FullMethodName, pb.Lease_LeaseRevoke_FullMethodName:
		b.witness.SessionWrites.Add(1)
	case pb.KV_Txn_FullMethodName:
		if t, ok := req.(*pb.TxnRequest); ok && readOnly(t) {
			b.witness.ReadTxns.Add(1)
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// readOnly: every operation of both branches of t is a range.
func readOnly(t *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{t.Success, t.Failure} {
		for _, op := range ops {
			if op.GetRequestRange() == nil {
				return false
			}
		}
	}
	return true
}

func (b *Backend) countWatchEvents(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil || method != pb.Watch_Watch_FullMethodName {
		return cs, err
	}
	b.witness.WatchStreams.Add(1)
	return &watchStream{ClientStream: cs, b: b}, nil
}

// watchStream counts the events of every watch response it receives.
type watchStream struct {
	grpc.ClientStream
	b *Backend
}

func (s *watchStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if r, ok := m.(*pb.WatchResponse); ok && err == nil {
		s.b.witness.WireWatchEvents.Add(int64(len(r.Events)))
	}
	return err
}
