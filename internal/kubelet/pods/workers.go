package pods

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/metrics"
	"orch/internal/kubelet/podconfig"
	"orch/internal/kubelet/prober"
	"orch/internal/kubelet/staticpods"
	"orch/internal/kubelet/sysctls"
	"orch/internal/kubelet/volumes"
	"orch/internal/worker"
)

// Runtime is every part of the CRI the pod workers call; each part is
// declared where it is used.
type Runtime interface {
	podReader
	sandboxRuntime
	containerRuntime
	imageRuntime
	prober.Runtime
}

var (
	_ Runtime = (*cri.Runtime)(nil)
	_ Runtime = (*cri.Fake)(nil)
)

// Workers runs the pods bound to one node. Set the exported fields, if at
// all, before Start.
type Workers struct {
	// RootDir is the kubelet's directory: each pod's volumes, /etc/hosts
	// and termination message files are under RootDir/pods/<uid>.
	// Required.
	RootDir string
	// StaticPodDir holds static pod manifests (data-dir/agent/pod-manifests);
	// empty for none. Static pods run from their files, with mirror pods
	// in the API.
	StaticPodDir string
	// DNS is the cluster DNS pods with dnsPolicy ClusterFirst use.
	DNS podconfig.ClusterDNS
	// ResolvConf is the node's resolv.conf, the DNS of dnsPolicy Default
	// (default /etc/resolv.conf).
	ResolvConf string
	// LogRoot holds the pods' log directories (default /var/log/pods).
	LogRoot string
	// SystemdCgroups names pod cgroups as systemd slices.
	SystemdCgroups bool
	// Relist is how often the runtime's pods are listed to notice
	// containers that changed, e.g. exited (default 1 s, as upstream's
	// PLEG relist); only the pods that changed are synced.
	Relist time.Duration
	// Resync is how often every pod is synced even when nothing changed
	// (default 10 s).
	Resync time.Duration
	// Parallel is the number of pods synced at once (default 4).
	Parallel int
	// Sysctls are the sysctls pods may set (the safe ones and
	// --allowed-unsafe-sysctls); nil lets any through to the runtime.
	Sysctls *sysctls.Allowlist
	// Metrics counts the probes; nil for none.
	Metrics *metrics.Kubelet
	// ImageViews mounts image volumes; nil: they are unsupported (a
	// runtime other than the agent's own containerd).
	ImageViews ImageViews
	// Addresses keeps a pod's address when its sandbox is made again
	// (after a reboot, say); nil: the network decides.
	Addresses AddressPreference
	// Now is the clock of status timestamps and of the restart and
	// image pull back-offs (time.Now when nil).
	Now func() time.Time

	client     kubernetes.Interface
	node       podconfig.Node
	reader     podReader
	sandboxes  sandboxRuntime
	containers containerRuntime
	images     imageRuntime
	exec       prober.Runtime // hooks and probes
	log        *slog.Logger
	recorder   record.EventRecorder
	lister     listerscorev1.PodLister
	services   listerscorev1.ServiceLister // every Service, for containers' service links
	queue      workqueue.TypedRateLimitingInterface[string]
	probes     *prober.Manager
	volumes    *volumes.Manager
	keys       sync.Map             // pod UID → namespace/name, for the probes' changes
	host       podconfig.HostResolv // ResolvConf, parsed
	static     *staticpods.Source   // nil without a StaticPodDir
	mirrors    *staticpods.Mirror

	relists    int                   // relists done; every resyncEvery-th is a full one
	prevRelist map[string]runtimePod // by pod UID, what the last relist saw

	restarts *flowcontrol.Backoff // by restartKey
	pulls    *flowcontrol.Backoff // by pullKey

	mu      sync.Mutex
	waiting map[string]map[string]*corev1.ContainerStateWaiting // pod UID → container → why it waits
	notes   map[string]*backOffNote                             // by back-off key
	resize  map[string]*podResize                               // pod UID → its allocation (allocation.go)

	admitting sync.Mutex      // one new pod admitted at a time (allocation.go)
	rejected  map[string]bool // pod UIDs refused at admission (w.mu)
}

// New returns the pod workers of node (node.Name is the node's name).
func New(client kubernetes.Interface, node podconfig.Node, runtime Runtime, log *slog.Logger) *Workers {
	w := &Workers{
		client: client, node: node, log: log.With("component", "pods", "node", node.Name),
		reader: runtime, sandboxes: runtime, containers: runtime, images: runtime, exec: runtime,
		waiting:  map[string]map[string]*corev1.ContainerStateWaiting{},
		notes:    map[string]*backOffNote{},
		resize:   map[string]*podResize{},
		rejected: map[string]bool{},
	}
	w.restarts, w.pulls = newBackOff(w.now), newBackOff(w.now)
	return w
}

// Start watches the node's pods and syncs them until ctx ends.
func (w *Workers) Start(ctx context.Context) error {
	if w.RootDir == "" {
		return fmt.Errorf("pod workers of node %q: no RootDir (the kubelet's directory) given", w.node.Name)
	}
	if w.LogRoot == "" {
		w.LogRoot = "/var/log/pods"
	}
	if w.ResolvConf == "" {
		w.ResolvConf = "/etc/resolv.conf"
	}
	w.host = w.readResolvConf()
	if w.Relist <= 0 {
		w.Relist = time.Second
	}
	if w.Resync <= 0 {
		w.Resync = 10 * time.Second
	}
	if w.Parallel <= 0 {
		w.Parallel = 4
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: w.client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	w.setUp(broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: w.node.Name}))
	defer w.probes.Close()

	factory := informers.NewSharedInformerFactoryWithOptions(w.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", w.node.Name).String()
	}))
	informer := factory.Core().V1().Pods()
	w.lister = informer.Lister()
	w.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods"})
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			w.queue.Add(key)
		}
	}
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("watch the pods of node %q: %w", w.node.Name, err)
	}
	services := informers.NewSharedInformerFactory(w.client, 0)
	w.services = services.Core().V1().Services().Lister()
	servicesSynced := services.Core().V1().Services().Informer().HasSynced
	factory.StartWithContext(ctx)
	services.StartWithContext(ctx)
	defer factory.Shutdown()
	defer services.Shutdown()
	defer w.queue.ShutDown() // worker.Run shuts it down too, once it ran
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced, servicesSynced) {
		return ctx.Err()
	}
	if w.StaticPodDir != "" {
		w.static = staticpods.NewSource(w.StaticPodDir, w.node.Name, w.log)
		w.static.OnChange(w.queue.Add)
		w.mirrors = staticpods.NewMirror(w.client, w.node.Name, w.log)
		staticDone := make(chan struct{})
		go func() { defer close(staticDone); w.static.Start(ctx) }()
		defer func() { <-staticDone }()
		select {
		case <-w.static.Synced():
		case <-ctx.Done():
			return nil
		}
	}

	relisted := make(chan struct{})
	go func() {
		defer close(relisted)
		wait.UntilWithContext(ctx, w.relist, w.Relist)
	}()
	defer func() { <-relisted }()
	return worker.Run(ctx, w.queue, worker.Errors(w.sync), worker.Options{Workers: w.Parallel, Log: w.log})
}

// setUp makes the parts the syncs use besides the runtime: the event
// recorder, the volume manager and the probes.
func (w *Workers) setUp(recorder record.EventRecorder) {
	w.recorder = recorder
	w.volumes = volumes.New(w.RootDir, w.client, w.log)
	w.volumes.Allocatable = w.node.Allocatable
	if w.ImageViews != nil {
		w.volumes.Images = imageVolumes{w}
	}
	w.probes = prober.NewManager(w.exec, w.recorder, w.probeChanged, w.log)
	w.probes.Metrics = w.Metrics
}

// readResolvConf is the node's resolv.conf; nothing (and a warning)
// when it cannot be read.
func (w *Workers) readResolvConf() podconfig.HostResolv {
	data, err := os.ReadFile(w.ResolvConf)
	if err != nil {
		w.log.Warn("cannot read the node's resolv.conf: pods with dnsPolicy Default get no name servers", "path", w.ResolvConf, "err", err)
		return podconfig.HostResolv{}
	}
	host, err := podconfig.ParseResolvConf(data)
	if err != nil {
		w.log.Warn("the node's resolv.conf is malformed", "path", w.ResolvConf, "err", err)
	}
	return host
}

// Pods are the pods the workers run: the node's pods in the API (mirror
// pods aside) and its static pods. None before Start.
func (w *Workers) Pods() []*corev1.Pod {
	if w.lister == nil {
		return nil
	}
	pods, _ := w.lister.List(everything)
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if !staticpods.IsMirror(p) {
			out = append(out, p)
		}
	}
	if w.static != nil {
		out = append(out, w.static.List()...)
	}
	return out
}

// probeChanged queues the pod whose probe results changed.
func (w *Workers) probeChanged(uid types.UID) {
	if key, ok := w.keys.Load(string(uid)); ok {
		w.queue.Add(key.(string))
	}
}

// now is w.Now, or the real time.
func (w *Workers) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}
