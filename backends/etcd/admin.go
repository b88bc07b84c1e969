package etcd

import (
	"context"
	"fmt"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
)

// List returns the distinct next path elements of the keys below path+"/",
// sorted by name, without queue nodes' companion keys (no child: see
// companionOf). It reads keys only, in pages, so a large namespace does not
// make one huge response.
func (b *Backend) List(ctx context.Context, p string) ([]string, error) {
	if err := checkPath(p); err != nil {
		return nil, err
	}
	cli, err := b.adminClient()
	if err != nil {
		return nil, err
	}
	const page = 1000
	prefix := p + "/"
	end := clientv3.GetPrefixRangeEnd(prefix)
	seen := make(map[string]struct{})
	from := prefix
	for {
		resp, err := cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(page),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil {
			return nil, fmt.Errorf("etcd: list %s: %w", p, clientv3.ContextError(ctx, err))
		}
		for _, kv := range resp.Kvs {
			rest := strings.TrimPrefix(string(kv.Key), prefix)
			name, _, _ := strings.Cut(rest, "/")
			if name != "" && !strings.Contains(name, "\x00") {
				seen[name] = struct{}{}
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// DeleteTree deletes the key path and every key below path+"/", in one
// transaction. It refuses any path outside zkbench's namespace
// (backends.InNamespace) with ErrOutsideNamespace.
func (b *Backend) DeleteTree(ctx context.Context, p string) error {
	if !backends.InNamespace(p) {
		return fmt.Errorf("etcd: delete tree %q: %w", p, ErrOutsideNamespace)
	}
	cli, err := b.adminClient()
	if err != nil {
		return err
	}
	_, err = cli.Txn(ctx).Then(clientv3.OpDelete(p), clientv3.OpDelete(p+"/", clientv3.WithPrefix())).Commit()
	if err != nil {
		return fmt.Errorf("etcd: delete tree %s: %w", p, clientv3.ContextError(ctx, err))
	}
	return nil
}
