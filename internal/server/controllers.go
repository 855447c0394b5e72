package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/rbacpolicy"
	"orch/internal/run"
)

// controllerManager runs the scheduler and the controllers while this server
// holds the orch-controller-manager Lease, so that with several servers only
// one set acts at a time. The manager itself (shared informers, events, the
// lease) acts as system:kube-controller-manager; each component as the
// identity build asks for.
type controllerManager struct {
	ids identities
	log *slog.Logger
	// build returns the components to run, constructed from ctx (they
	// register their informers, which start afterwards).
	build buildFunc

	mu      sync.Mutex
	configs map[string]*rest.Config // by user: made once, reused on every lead
}

// buildFunc builds the components from the manager's Context and as, which
// gives the same Context with clients acting as another user.
type buildFunc func(ctx controller.Context, as asFunc) ([]run.Named, error)

// asFunc returns the manager's Context with clients that authenticate as
// user in groups.
type asFunc func(user string, groups ...string) (controller.Context, error)

// configFor is the client configuration of user, issued once.
func (m *controllerManager) configFor(user string, groups ...string) (*rest.Config, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.configs[user]; ok {
		return c, nil
	}
	c, err := m.ids.config(user, groups...)
	if err != nil {
		return nil, err
	}
	if m.configs == nil {
		m.configs = map[string]*rest.Config{}
	}
	m.configs[user] = c
	return c, nil
}

const leaseName = "orch-controller-manager"

func (m *controllerManager) Start(ctx context.Context) error {
	own, err := m.configFor(rbacpolicy.ControllerManagerUser)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(own)
	if err != nil {
		return err
	}
	// The lease lives in kube-system, which bootstrap creates.
	for {
		if _, err := client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{}); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
	hostname, _ := os.Hostname()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metaName(leaseName),
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: fmt.Sprintf("%s_%s", hostname, uuid.NewUUID())},
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		ReleaseOnCancel: true, Name: leaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { m.lead(ctx, own, client) },
			OnStoppedLeading: func() { m.log.Info("no longer the leader of the controllers") },
		},
	})
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		elector.Run(ctx) // returns when leadership is lost; try again
	}
	return nil
}

// lead runs every component until ctx ends (leadership lost or shutdown).
func (m *controllerManager) lead(ctx context.Context, own *rest.Config, client kubernetes.Interface) {
	m.log.Info("leading the controllers")
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	meta, err := metadata.NewForConfig(own)
	if err != nil {
		m.log.Error("cannot build the metadata client", "err", err)
		return
	}
	cctx := controller.Context{
		Client: client, Metadata: meta, Config: own,
		Informers: informers.NewSharedInformerFactory(client, 0),
		Recorder: func(component string) record.EventRecorder {
			return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		},
		Log:   m.log,
		Clock: clock.RealClock{},
	}
	as := func(user string, groups ...string) (controller.Context, error) {
		cfg, err := m.configFor(user, groups...)
		if err != nil {
			return controller.Context{}, err
		}
		c := cctx
		c.Config = cfg
		if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
			return controller.Context{}, err
		}
		if c.Metadata, err = metadata.NewForConfig(cfg); err != nil {
			return controller.Context{}, err
		}
		return c, nil
	}
	components, err := m.build(cctx, as)
	if err != nil {
		m.log.Error("cannot build the controllers", "err", err)
		return
	}
	cctx.Informers.StartWithContext(ctx)
	defer cctx.Informers.Shutdown()
	var wg sync.WaitGroup
	for _, c := range components {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Start(ctx); err != nil && ctx.Err() == nil {
				m.log.Error("controller failed", "controller", c.Name, "err", err)
			}
		}()
	}
	wg.Wait()
}
