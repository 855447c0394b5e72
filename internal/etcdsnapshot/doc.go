// Package etcdsnapshot saves, lists, prunes, verifies and restores snapshots
// of the embedded etcd.
//
// A snapshot is one file, dir/<name>-<node>-<unix seconds>.db, holding
// etcd's own snapshot stream (a bbolt database followed by etcd's sha256 of
// it), and beside it <file>.sha256 in sha256sum format. Restore refuses a
// file whose .sha256 is missing or does not match, builds a fresh
// single-member data directory from it with etcdutl, and moves the old data
// directory aside rather than deleting it.
//
//	snap, err := etcdsnapshot.Save(ctx, client, dir, "", "node1", time.Now())
//	…
//	err = etcdsnapshot.Restore(ctx, snap.Path, "/var/lib/orch/server/db/etcd",
//		"orch", "http://127.0.0.1:2380", log)
//
// Scheduler takes snapshots on a cron schedule and keeps the newest few.
package etcdsnapshot
