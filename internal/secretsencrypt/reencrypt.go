package secretsencrypt

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/storage/value"
)

// reencryptPage is how many keys Reencrypt reads at a time.
const reencryptPage = 500

// Reencrypt rewrites, with t's writing key, every value under prefix that
// t reads as stale (written with another key, or not encrypted), each only
// if it has not changed since it was read (one that has was written by
// the apiserver, with the current key, meanwhile). It returns how many it
// rewrote.
func Reencrypt(ctx context.Context, kv clientv3.KV, prefix string, t value.Transformer) (int, error) {
	rewritten, from := 0, prefix
	end := clientv3.GetPrefixRangeEnd(prefix)
	for {
		resp, err := kv.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(reencryptPage))
		if err != nil {
			return rewritten, err
		}
		for _, item := range resp.Kvs {
			key := string(item.Key)
			plain, stale, err := t.TransformFromStorage(ctx, item.Value, value.DefaultContext(key))
			if err != nil {
				return rewritten, fmt.Errorf("cannot decrypt %s: %w", key, err)
			}
			if !stale {
				continue
			}
			data, err := t.TransformToStorage(ctx, plain, value.DefaultContext(key))
			if err != nil {
				return rewritten, fmt.Errorf("cannot encrypt %s: %w", key, err)
			}
			txn, err := kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", item.ModRevision)).Then(clientv3.OpPut(key, string(data))).Commit()
			if err != nil {
				return rewritten, err
			}
			if txn.Succeeded {
				rewritten++
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return rewritten, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
