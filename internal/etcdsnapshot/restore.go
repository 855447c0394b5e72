package etcdsnapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// RevisionBump is how far Restore moves etcd's revision past the
// snapshot's, marking everything before it compacted. Kubernetes clients
// remember resourceVersions (etcd revisions) newer than the snapshot; after
// the bump their watches and lists get "410 Gone" and relist instead of
// waiting for a revision the restored data already used for something
// else. It is the figure etcd's docs give for Kubernetes.
const RevisionBump = 1_000_000_000

// Restore replaces the etcd data directory etcdDataDir with the snapshot at
// snapshotPath, as a new cluster of one member named memberName with peer
// URL peerURL; embed.StartEtcd on etcdDataDir with that name and peer URL
// then serves the snapshot's data. It verifies the snapshot first (see
// Verify) and touches nothing when that fails. The snapshot is restored into
// a new directory beside etcdDataDir; only then is an existing etcdDataDir
// renamed to <etcdDataDir>-old-<unix seconds> and the new one put in its
// place. Other servers of an HA cluster must join the restored one afresh:
// it has a new cluster ID, so their old members cannot talk to it.
func Restore(ctx context.Context, snapshotPath, etcdDataDir, memberName, peerURL string, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if memberName == "" || peerURL == "" || etcdDataDir == "" {
		return errors.New("restore etcd snapshot: the member name, peer URL and data directory are required")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	log.Info("verifying etcd snapshot", "snapshot", snapshotPath)
	if err := Verify(snapshotPath); err != nil {
		return fmt.Errorf("restore etcd snapshot: %w", err)
	}
	etcdDataDir = filepath.Clean(etcdDataDir)
	parent := filepath.Dir(etcdDataDir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("restore etcd snapshot: create %q: %w", parent, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(etcdDataDir)+"-restore-")
	if err != nil {
		return fmt.Errorf("restore etcd snapshot: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	now := time.Now()
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        snapshotPath,
		Name:                memberName,
		OutputDataDir:       tmp,
		PeerURLs:            []string{peerURL},
		InitialCluster:      memberName + "=" + peerURL,
		InitialClusterToken: "orch-restore-" + strconv.FormatInt(now.UnixNano(), 36),
		RevisionBump:        RevisionBump,
		MarkCompacted:       true,
	})
	if err != nil {
		return fmt.Errorf("restore etcd snapshot %q: %w", snapshotPath, err)
	}

	old, err := moveAside(etcdDataDir, now)
	if err != nil {
		return err
	}
	if old != "" {
		log.Info("moved the old etcd data aside; delete it once the restored cluster is good", "from", etcdDataDir, "to", old)
	}
	if err := os.Rename(tmp, etcdDataDir); err != nil {
		return fmt.Errorf("restore etcd snapshot: put the restored data in place: %w", err)
	}
	if err := syncDir(parent); err != nil {
		return err
	}
	log.Info("restored etcd snapshot", "snapshot", snapshotPath, "dataDir", etcdDataDir, "member", memberName, "peerURL", peerURL)
	return nil
}

// moveAside renames dir to <dir>-old-<unix seconds> (with a suffix if that
// exists) and returns the new name, or "" when dir does not exist.
func moveAside(dir string, now time.Time) (string, error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("restore etcd snapshot: %w", err)
	}
	base := fmt.Sprintf("%s-old-%d", dir, now.Unix())
	old := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(old); errors.Is(err, fs.ErrNotExist) {
			break
		}
		old = fmt.Sprintf("%s.%d", base, i)
	}
	if err := os.Rename(dir, old); err != nil {
		return "", fmt.Errorf("restore etcd snapshot: move the old data aside: %w", err)
	}
	return old, nil
}
