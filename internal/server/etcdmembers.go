package server

import (
	"context"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// etcdMembers looks after the etcd cluster of a server of several: it
// keeps this member's peer URL current (a single server restarted with
// --cluster-init moves from loopback to its address), promotes learners
// once they have caught up, and removes the member of a server whose
// Node is deleted. Every server runs it; each step is idempotent.
type etcdMembers struct {
	etcd    *clientv3.Client
	self    uint64
	peerURL string
	rest    *rest.Config
	log     *slog.Logger
}

// promoteEvery is how often learners are offered promotion.
const promoteEvery = 2 * time.Second

func (m *etcdMembers) Start(ctx context.Context) error {
	m.updateOwnPeerURL(ctx)
	client, err := kubernetes.NewForConfig(m.rest)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if node, ok := obj.(*corev1.Node); ok {
				m.removeMembersOf(ctx, node.Name)
			}
		},
	})
	factory.StartWithContext(ctx)
	defer factory.Shutdown()
	ticker := time.NewTicker(promoteEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			m.promoteLearners(ctx)
		}
	}
}

func (m *etcdMembers) updateOwnPeerURL(ctx context.Context) {
	list, err := m.etcd.MemberList(ctx)
	if err != nil {
		// A learner may not list; a member that just joined has its URL.
		m.log.Debug("cannot list etcd members to check this member's peer URL", "err", err)
		return
	}
	for _, member := range list.Members {
		if member.ID == m.self && !samePeer(member.PeerURLs, m.peerURL) {
			if _, err := m.etcd.MemberUpdate(ctx, m.self, []string{m.peerURL}); err != nil {
				m.log.Warn("cannot update this etcd member's peer URL", "want", m.peerURL, "err", err)
				return
			}
			m.log.Info("etcd member's peer URL updated", "was", member.PeerURLs, "now", m.peerURL)
		}
	}
}

func (m *etcdMembers) promoteLearners(ctx context.Context) {
	list, err := m.etcd.MemberList(ctx)
	if err != nil {
		return
	}
	for _, member := range list.Members {
		if !member.IsLearner {
			continue
		}
		// etcd refuses until the learner has caught up with the leader.
		if _, err := m.etcd.MemberPromote(ctx, member.ID); err != nil {
			m.log.Debug("etcd learner not promoted yet", "member", member.Name, "err", err)
			continue
		}
		m.log.Info("etcd learner promoted to a voting member", "member", member.Name)
	}
}

// removeMembersOf removes the etcd members of the server of node.
func (m *etcdMembers) removeMembersOf(ctx context.Context, node string) {
	list, err := m.etcd.MemberList(ctx)
	if err != nil {
		m.log.Warn("cannot list etcd members after a Node was deleted", "node", node, "err", err)
		return
	}
	for _, member := range list.Members {
		if memberNode(member.Name) != node {
			continue
		}
		if member.ID == m.self {
			m.log.Warn("this server's Node was deleted; its etcd member stays until another server removes it", "member", member.Name)
			continue
		}
		if _, err := m.etcd.MemberRemove(ctx, member.ID); err != nil {
			m.log.Warn("cannot remove the etcd member of a deleted Node", "node", node, "member", member.Name, "err", err)
			continue
		}
		m.log.Info("removed the etcd member of a deleted Node", "node", node, "member", member.Name)
	}
}
