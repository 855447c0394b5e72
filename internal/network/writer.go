package network

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"orch/internal/worker"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// DefaultConfFile is the conflist's file name in the CNI conf dir. The
// runtime uses the first file by name, so it sorts early.
const DefaultConfFile = "10-orch.conflist"

// RuntimeConfigUpdater is the part of the CRI runtime that learns the
// node's pod CIDR (cri.Runtime and cri.Fake have it).
type RuntimeConfigUpdater interface {
	UpdateRuntimeConfig(ctx context.Context, podCIDR string) error
}

// CNIConfig says whose pod network CNIConfigWriter writes, and where.
type CNIConfig struct {
	NodeName string // the agent's Node
	ConfDir  string // the runtime's CNI conf dir (containerd.Config.CNIConfDir)
	FileName string // DefaultConfFile when empty
	// Bridge are the conflist's options; a zero MTU is DefaultMTU() (read
	// when the writer is made).
	Bridge BridgeOptions
	// Resync is how often the file is checked (and put back) even when the
	// Node does not change (DefaultResync when zero; client-go makes it at
	// least 1 s).
	Resync time.Duration
}

// DefaultResync is CNIConfig.Resync's default.
const DefaultResync = time.Minute

// CNIConfigWriter keeps the pod network's conflist in the runtime's CNI
// conf dir in step with the node's spec.podCIDR. It watches only its own
// Node (a field selector on metadata.name), writes the file atomically when
// the podCIDR is set or changes, and then calls UpdateRuntimeConfig. A
// podCIDR that goes away (the Node deleted and not yet registered again)
// leaves the file as it is: the pods running on it keep their network.
// Failures are retried with backoff.
type CNIConfigWriter struct {
	cfg    CNIConfig
	client kubernetes.Interface
	rt     RuntimeConfigUpdater
	log    *slog.Logger

	waitLogged bool // only the sync loop reads and writes it

	mu       sync.Mutex
	podCIDRs []string // of the conflist written and told to the runtime
	ready    chan struct{}
}

// NewCNIConfigWriter returns a writer for cfg; log nil means slog.Default().
func NewCNIConfigWriter(cfg CNIConfig, client kubernetes.Interface, rt RuntimeConfigUpdater, log *slog.Logger) *CNIConfigWriter {
	if cfg.FileName == "" {
		cfg.FileName = DefaultConfFile
	}
	if cfg.Bridge.MTU == 0 {
		cfg.Bridge.MTU = DefaultMTU()
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if log == nil {
		log = slog.Default()
	}
	return &CNIConfigWriter{cfg: cfg, client: client, rt: rt, ready: make(chan struct{}),
		log: log.With("component", "cni-config", "node", cfg.NodeName)}
}

// Path is the conflist's path.
func (w *CNIConfigWriter) Path() string { return filepath.Join(w.cfg.ConfDir, w.cfg.FileName) }

// Ready is closed once a conflist is written and the runtime was told its
// pod CIDR: from then on pods get addresses.
func (w *CNIConfigWriter) Ready() <-chan struct{} { return w.ready }

// PodCIDR is the IPv4 pod CIDR of the conflist in place, or its first
// when it has none ("" before Ready). The gateway on it answers DNS.
func (w *CNIConfigWriter) PodCIDR() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.podCIDRs {
		if !strings.Contains(c, ":") {
			return c
		}
	}
	if len(w.podCIDRs) > 0 {
		return w.podCIDRs[0]
	}
	return ""
}

// PodCIDRs are the pod CIDRs of the conflist in place (nil before Ready).
func (w *CNIConfigWriter) PodCIDRs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.podCIDRs)
}

// Start watches the Node until ctx ends, and returns nil then. It returns
// an error at once when the configuration cannot work.
func (w *CNIConfigWriter) Start(ctx context.Context) error {
	if w.cfg.NodeName == "" || w.cfg.ConfDir == "" {
		return fmt.Errorf("network: the CNI config writer needs a node name and a CNI conf dir (got %q and %q)", w.cfg.NodeName, w.cfg.ConfDir)
	}
	// Fail now on options that can never make a valid conflist.
	if _, err := BridgeConfList([]string{"10.42.0.0/24"}, w.cfg.Bridge); err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(w.client, w.cfg.Resync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", w.cfg.NodeName).String()
		}))
	nodes := factory.Core().V1().Nodes()
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "cni-config"})
	defer queue.ShutDown()
	enqueue := func(any) { queue.Add(w.cfg.NodeName) }
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return err
	}
	lister := nodes.Lister()
	factory.StartWithContext(ctx)
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced) {
		return nil // ctx ended
	}
	return worker.Run(ctx, queue, func(ctx context.Context, _ string) (worker.Result, error) {
		if err := w.sync(ctx, lister); err != nil {
			return worker.Result{}, fmt.Errorf("writing the pod network's CNI config: %w", err)
		}
		return worker.Result{}, nil
	}, worker.Options{Log: w.log})
}

// sync makes the conflist and the runtime match the Node's podCIDR.
func (w *CNIConfigWriter) sync(ctx context.Context, lister corelisters.NodeLister) error {
	node, err := lister.Get(w.cfg.NodeName)
	if err != nil {
		return nil // not registered yet (or deleted): the file stays as it is
	}
	podCIDRs := podCIDRsOf(node)
	if len(podCIDRs) == 0 {
		if !w.waitLogged {
			w.waitLogged = true
			w.log.Info("waiting for the node's podCIDR (given by the server's node IPAM)")
		}
		return nil
	}
	data, err := BridgeConfList(podCIDRs, w.cfg.Bridge)
	if err != nil {
		return err
	}
	// Written (when it differs) on every sync, so that a file removed or
	// edited by hand is put back at the next resync.
	written, err := writeIfChanged(w.Path(), data)
	if err != nil {
		return fmt.Errorf("network: write %s: %w", w.Path(), err)
	}
	if written {
		w.log.Info("wrote the pod network's CNI config", "file", w.Path(), "podCIDRs", podCIDRs, "mtu", w.cfg.Bridge.MTU)
	}
	old := w.PodCIDRs()
	if slices.Equal(podCIDRs, old) {
		return nil
	}
	// The runtime takes the CIDRs comma-separated, as the kubelet sends
	// them.
	if err := w.rt.UpdateRuntimeConfig(ctx, strings.Join(podCIDRs, ",")); err != nil {
		return fmt.Errorf("network: tell the runtime the pod CIDRs %s: %w", podCIDRs, err)
	}
	w.mu.Lock()
	w.podCIDRs = podCIDRs
	w.mu.Unlock()
	if old == nil {
		close(w.ready)
	}
	w.log.Info("told the runtime the pod CIDRs", "podCIDRs", podCIDRs, "was", old)
	return nil
}

// podCIDRsOf is the Node's pod CIDRs, the primary first.
func podCIDRsOf(node *corev1.Node) []string {
	if len(node.Spec.PodCIDRs) > 0 {
		return slices.Clone(node.Spec.PodCIDRs)
	}
	if node.Spec.PodCIDR != "" {
		return []string{node.Spec.PodCIDR}
	}
	return nil
}

// writeIfChanged writes data to path through a temporary file and a
// rename, so that the runtime never reads half a file, unless path already
// holds data; it reports whether it wrote. The temporary name ends in .tmp, which libcni does not load.
func writeIfChanged(path string, data []byte) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return false, err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	err = errors.Join(err, f.Chmod(0o644), f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err == nil, err
}
