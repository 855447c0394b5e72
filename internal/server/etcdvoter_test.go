package server

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"orch/internal/envtest"
	"orch/internal/storage"
)

// fakeMember is an etcd member whose learner state the test sets.
type fakeMember struct{ learner atomic.Bool }

func (m *fakeMember) IsLearner() bool { return m.learner.Load() }

// TestEtcdVoterCheck: a joining server's member is a learner; the check
// fails, saying why, until it is promoted, then passes.
func TestEtcdVoterCheck(t *testing.T) {
	member := &fakeMember{}
	member.learner.Store(true)
	check := etcdVoterCheck(member)
	if err := check(context.Background()); !errors.Is(err, errLearner) {
		t.Fatalf("a learner: check = %v, want %v", err, errLearner)
	}
	member.learner.Store(false)
	if err := check(context.Background()); err != nil {
		t.Errorf("promoted to a voter: check = %v, want ok", err)
	}
}

// TestEtcdVoterCheckOnAJoiningMember: on real embedded etcd, a member
// added as a learner (as a joining server's is) fails the check until the
// first member promotes it, then passes.
func TestEtcdVoterCheckOnAJoiningMember(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two etcd members")
	}
	member := func(name string) storage.EtcdConfig {
		return storage.EtcdConfig{Dir: filepath.Join(t.TempDir(), name), Name: name, UnsafeNoFsync: true,
			ClientURL: "http://127.0.0.1:" + strconv.Itoa(envtest.FreePort(t)),
			PeerURL:   "http://127.0.0.1:" + strconv.Itoa(envtest.FreePort(t))}
	}
	a := member("a")
	first, err := storage.StartEtcd(a)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if err := etcdVoterCheck(first.Server())(context.Background()); err != nil {
		t.Errorf("the first member: check = %v, want ok", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := member("b")
	added, err := first.Client.MemberAddAsLearner(ctx, []string{cfg.PeerURL})
	if err != nil {
		t.Fatal(err)
	}
	cfg.InitialCluster = "a=" + a.PeerURL + ",b=" + cfg.PeerURL
	cfg.JoinExisting = true
	joined, err := storage.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer joined.Close()
	check := etcdVoterCheck(joined.Server())
	if err := check(ctx); !errors.Is(err, errLearner) {
		t.Fatalf("a learner: check = %v, want %v", err, errLearner)
	}
	envtest.Eventually(t, "the learner promoted", func() (bool, error) {
		_, err := first.Client.MemberPromote(ctx, added.Member.ID) // refused until it has caught up
		return err == nil, nil
	})
	envtest.Eventually(t, "the check ok on the promoted member", func() (bool, error) { return check(ctx) == nil, nil })
}
