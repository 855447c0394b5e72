// Package node is the kubelet's node part: it registers the agent's Node,
// keeps its Lease in kube-node-lease fresh and posts its status, speaking
// only client-go to the apiserver.
//
// Registration creates the Node (labels, --node-taint taints, capacity,
// addresses, nodeInfo, conditions) or, when it exists, updates its labels
// and status. Every LeaseInterval (10 s) the Lease is renewed; the status is
// posted every StatusInterval (1 min) and as soon as it differs from what
// the Node says (e.g. a controller changed a condition, or the runtime was
// upgraded). While the apiserver cannot be reached the loop retries with
// backoff and never gives up.
//
// Ready follows the runtime's status (CRI Status): True when both its
// RuntimeReady and NetworkReady conditions are, else False with upstream's
// reasons (e.g. "container runtime network not ready: NetworkReady=false
// reason:NetworkPluginNotReady message:..." until the CNI config exists).
// While the node is not ready the loop runs every NotReadyInterval (1 s),
// so the Node turns Ready soon after the runtime does.
//
// MemoryPressure, DiskPressure and PIDPressure are measured as upstream's
// eviction manager measures them, every MeasureInterval (10 s, upstream's
// housekeeping period): the signals memory.available, nodefs.available,
// nodefs.inodesFree, imagefs.available, imagefs.inodesFree and
// pid.available (Machine.Measure) against the hard eviction thresholds
// (--eviction-hard, upstream's Linux defaults DefaultEvictionHardFlag). A
// condition is True, with upstream's reason (e.g.
// KubeletHasInsufficientMemory), while one of its thresholds is met and
// for PressureTransitionPeriod (5 min) after. Only the conditions are
// reported (the node lifecycle controller taints the Node for them): pods
// are not evicted under node pressure, and nothing is subtracted from
// allocatable for the thresholds.
//
// status.images lists the runtime's images (CRI ListImages) as upstream's
// kubelet does: the MaxImages largest, each with its names and size
// (Images); a new image is posted at once, like any other change.
//
// The Node and Lease objects are built by pure functions (BuildNode,
// Status, Conditions, Lease); the loop takes an injected clock.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Config says which Node the agent registers and how often it reports.
type Config struct {
	Name     string            // the Node's name
	Hostname string            // the Hostname address and kubernetes.io/hostname label (Name when empty)
	NodeIPs  []net.IP          // InternalIP addresses
	Labels   map[string]string // --node-label
	Taints   []corev1.Taint    // --node-taint: set when the Node is created, never after
	DataDir  string            // its file system's size is the ephemeral-storage capacity
	// KubeletPort is the port of the kubelet API, reported in
	// status.daemonEndpoints (none when zero).
	KubeletPort int

	// LeaseInterval is how often the Lease is renewed (10 s when zero);
	// StatusInterval how often the status is posted unchanged (1 min when
	// zero); MaxBackoff bounds the wait between failed attempts (the
	// LeaseInterval when zero).
	LeaseInterval, StatusInterval, MaxBackoff time.Duration
	// NotReadyInterval is how often the loop runs while the node is not
	// ready (1 s when zero).
	NotReadyInterval time.Duration

	// EvictionHard are the thresholds that put the node under pressure:
	// DefaultEvictionHard when nil, none when empty (--eviction-hard).
	EvictionHard []Threshold
	// KubeletDir is the nodefs, the kubelet's root dir (DataDir when
	// empty); ImageFsDir the imagefs, the container runtime's root dir
	// (the image file system the runtime reports when empty).
	KubeletDir, ImageFsDir string
	// MeasureInterval is how often the pressure signals are measured (10 s
	// when zero); PressureTransitionPeriod how long a pressure condition
	// stays True after its signals last met a threshold (5 min when zero,
	// upstream's --eviction-pressure-transition-period).
	MeasureInterval, PressureTransitionPeriod time.Duration
}

// Runtime is the part of the container runtime the node reports on.
type Runtime interface {
	Version(ctx context.Context) (*runtimeapi.VersionResponse, error)
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
	ImageLister
}

// Agent registers and heart-beats one Node.
type Agent struct {
	cfg    Config
	client kubernetes.Interface
	rt     Runtime
	clock  clock.Clock
	log    *slog.Logger
	// readSystem reads the machine's facts (ReadSystem; tests replace it).
	readSystem func(dataDir string) (System, error)
	// measure measures the pressure signals (measureHost; tests replace it).
	measure func(ctx context.Context) (Observations, error)

	uid      types.UID // of the registered Node; empty until registered
	lastPost time.Time // when the status was last posted
	ready    bool      // whether the last status said Ready

	tracker     *pressureTracker
	pressure    Pressure  // as of the last measurement
	lastMeasure time.Time // when the signals were last measured
	measureErr  string    // what the last measurement could not read, to log it once

	images    []corev1.ContainerImage // as last listed
	imagesErr string                  // why listing the images last failed, to log it once
}

// New returns an Agent for cfg; clk nil means the real clock, log nil slog.Default().
func New(cfg Config, client kubernetes.Interface, rt Runtime, clk clock.Clock, log *slog.Logger) *Agent {
	if cfg.LeaseInterval <= 0 {
		cfg.LeaseInterval = 10 * time.Second
	}
	if cfg.StatusInterval <= 0 {
		cfg.StatusInterval = time.Minute
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = cfg.LeaseInterval
	}
	if cfg.NotReadyInterval <= 0 {
		cfg.NotReadyInterval = time.Second
	}
	if cfg.EvictionHard == nil {
		cfg.EvictionHard = DefaultEvictionHard()
	}
	if cfg.KubeletDir == "" {
		cfg.KubeletDir = cfg.DataDir
	}
	if cfg.MeasureInterval <= 0 {
		cfg.MeasureInterval = 10 * time.Second
	}
	if cfg.PressureTransitionPeriod <= 0 {
		cfg.PressureTransitionPeriod = 5 * time.Minute
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	if log == nil {
		log = slog.Default()
	}
	a := &Agent{cfg: cfg, client: client, rt: rt, clock: clk, readSystem: ReadSystem,
		tracker: newPressureTracker(cfg.EvictionHard, cfg.PressureTransitionPeriod),
		log:     log.With("component", "node", "node", cfg.Name)}
	a.measure = a.measureHost
	return a
}

// Start registers the Node and keeps it reported until ctx ends; it
// returns nil then. Failures are logged and retried with backoff.
func (a *Agent) Start(ctx context.Context) error {
	backoff := time.Duration(0)
	for {
		// A server that stopped answering (not refusing) must not hang the loop.
		sctx, cancel := context.WithTimeout(ctx, syncTimeout)
		err := a.Sync(sctx)
		cancel()
		wait := a.cfg.LeaseInterval
		if !a.ready {
			wait = a.cfg.NotReadyInterval
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			backoff = min(max(2*backoff, 500*time.Millisecond), a.cfg.MaxBackoff)
			wait = backoff
			a.log.Error("reporting the node failed; retrying", "err", err, "after", wait)
		} else {
			backoff = 0
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.clock.After(wait):
		}
	}
}

// Sync does one round: register the Node if it is not yet, post its
// status if it is due or changed, and renew its Lease.
func (a *Agent) Sync(ctx context.Context) error {
	sys, err := a.system(ctx)
	if err != nil {
		return err
	}
	if a.uid == "" {
		if err := a.register(ctx, sys); err != nil {
			return err
		}
	}
	statusErr := a.postStatus(ctx, sys)
	if errors.Is(statusErr, errNodeGone) {
		return statusErr // registered again next round, then the Lease is renewed
	}
	return errors.Join(statusErr, a.renewLease(ctx))
}

// syncTimeout bounds one round of Sync, in real time.
const syncTimeout = 30 * time.Second

var errNodeGone = errors.New("the Node was deleted; registering it again")

func (a *Agent) system(ctx context.Context) (System, error) {
	sys, err := a.readSystem(a.cfg.DataDir)
	if err != nil {
		return sys, err
	}
	v, err := a.rt.Version(ctx)
	if err != nil {
		return sys, fmt.Errorf("container runtime version: %w", err)
	}
	sys.RuntimeVersion = v.RuntimeName + "://" + v.RuntimeVersion
	st, err := a.rt.Status(ctx, false)
	if err != nil {
		return sys, fmt.Errorf("container runtime status: %w", err)
	}
	sys.NotReady = RuntimeProblems(st.GetStatus())
	a.ready = len(sys.NotReady) == 0
	sys.Pressure = a.observePressure(ctx)
	sys.Images = a.listImages(ctx)
	return sys, nil
}

// listImages is the node's status.images: the runtime's images, or the
// ones last listed while the runtime cannot list them.
func (a *Agent) listImages(ctx context.Context) []corev1.ContainerImage {
	list, err := a.rt.ListImages(ctx, nil)
	if err != nil {
		if msg := err.Error(); msg != a.imagesErr {
			a.log.Warn("cannot list the container runtime's images; status.images keeps the last list", "err", err)
			a.imagesErr = msg
		}
		return a.images
	}
	a.imagesErr = ""
	a.images = Images(list, MaxImages)
	return a.images
}

// observePressure measures the pressure signals when MeasureInterval has
// passed since the last time, and returns the node's pressure.
func (a *Agent) observePressure(ctx context.Context) Pressure {
	now := a.clock.Now()
	if !a.lastMeasure.IsZero() && now.Sub(a.lastMeasure) < a.cfg.MeasureInterval {
		return a.pressure
	}
	a.lastMeasure = now
	obs, err := a.measure(ctx)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != "" && msg != a.measureErr {
		a.log.Warn("cannot measure some pressure signals; their thresholds are not checked", "err", err)
	}
	a.measureErr = msg
	pressure, met := a.tracker.observe(obs, now)
	for _, pc := range pressureConditions {
		if pressure[pc.typ] != a.pressure[pc.typ] {
			status := corev1.ConditionFalse
			if pressure[pc.typ] {
				status = corev1.ConditionTrue
			}
			a.log.Info("node condition changed", "condition", pc.typ, "status", status, "thresholdsMet", thresholdStrings(met, obs))
		}
	}
	a.pressure = pressure
	return pressure
}

// measureHost measures this machine, its imagefs being ImageFsDir or the
// image file system the runtime reports.
func (a *Agent) measureHost(ctx context.Context) (Observations, error) {
	imageFs, err := a.cfg.ImageFsDir, error(nil)
	if imageFs == "" {
		imageFs, err = RuntimeImageFs(ctx, a.rt)
	}
	obs, merr := HostMachine(a.cfg.KubeletDir, imageFs).Measure()
	return obs, errors.Join(err, merr)
}

// RuntimeImageFs is the mount point of the runtime's image file system
// (CRI ImageFsInfo), as upstream's kubelet finds its imagefs.
func RuntimeImageFs(ctx context.Context, rt interface {
	ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}) (string, error) {
	info, err := rt.ImageFsInfo(ctx)
	if err != nil {
		return "", fmt.Errorf("imagefs: container runtime ImageFsInfo: %w", err)
	}
	for _, fs := range info.GetImageFilesystems() {
		if mp := fs.GetFsId().GetMountpoint(); mp != "" {
			return mp, nil
		}
	}
	return "", errors.New("imagefs: the container runtime reports no image file system")
}

// thresholdStrings are the thresholds met, with what was measured, for logs.
func thresholdStrings(met []Threshold, obs Observations) []string {
	out := make([]string, len(met))
	for i, t := range met {
		out[i] = fmt.Sprintf("%s (available %d of %d)", t, obs[t.Signal].Available, obs[t.Signal].Capacity)
	}
	return out
}

// RuntimeProblems are the reasons, in upstream's words, why a runtime
// with status st cannot run pods; none when it is ready.
func RuntimeProblems(st *runtimeapi.RuntimeStatus) []string {
	var runtimeReady, networkReady *runtimeapi.RuntimeCondition
	for _, c := range st.GetConditions() {
		switch c.Type {
		case runtimeapi.RuntimeReady:
			runtimeReady = c
		case runtimeapi.NetworkReady:
			networkReady = c
		}
	}
	var problems []string
	if runtimeReady == nil || !runtimeReady.Status {
		problems = append(problems, "container runtime is down")
	}
	if networkReady == nil {
		problems = append(problems, "container runtime network not ready: the runtime reports no NetworkReady condition")
	} else if !networkReady.Status {
		problems = append(problems, fmt.Sprintf("container runtime network not ready: %s=%t reason:%s message:%s",
			networkReady.Type, networkReady.Status, networkReady.Reason, networkReady.Message))
	}
	return problems
}

// register creates the Node, or updates the labels of the one that exists.
func (a *Agent) register(ctx context.Context, sys System) error {
	nodes := a.client.CoreV1().Nodes()
	desired := BuildNode(a.cfg, sys, a.clock.Now())
	created, err := nodes.Create(ctx, desired, metav1.CreateOptions{})
	if err == nil {
		a.uid = created.UID
		a.lastPost = time.Time{} // post the full status at once
		a.log.Info("registered the node", "ips", ipStrings(a.cfg.NodeIPs), "runtime", sys.RuntimeVersion)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("register node %q: %w", a.cfg.Name, err)
	}
	existing, err := nodes.Get(ctx, a.cfg.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %q: %w", a.cfg.Name, err)
	}
	if merged, changed := MergeLabels(existing, desired); changed {
		if existing, err = nodes.Update(ctx, merged, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update the labels of node %q: %w", a.cfg.Name, err)
		}
	}
	a.uid = existing.UID
	a.lastPost = time.Time{}
	a.log.Info("node was registered before; updated it", "ips", ipStrings(a.cfg.NodeIPs), "runtime", sys.RuntimeVersion)
	return nil
}

// postStatus posts the node status when it is due or differs from the Node's.
func (a *Agent) postStatus(ctx context.Context, sys System) error {
	nodes := a.client.CoreV1().Nodes()
	current, err := nodes.Get(ctx, a.cfg.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		a.uid = ""
		return errNodeGone
	}
	if err != nil {
		return fmt.Errorf("get node %q: %w", a.cfg.Name, err)
	}
	now := a.clock.Now()
	desired := Status(a.cfg, sys, current.Status.Conditions, now)
	KeepExtendedResources(current.Status, &desired)
	due := a.lastPost.IsZero() || now.Sub(a.lastPost) >= a.cfg.StatusInterval
	if !due && !StatusChanged(current.Status, desired) {
		return nil
	}
	updated := current.DeepCopy()
	// Keep what others set (volumes, extended resources): replace what
	// the agent reports.
	updated.Status.Capacity, updated.Status.Allocatable = desired.Capacity, desired.Allocatable
	updated.Status.Conditions, updated.Status.Addresses, updated.Status.NodeInfo = desired.Conditions, desired.Addresses, desired.NodeInfo
	updated.Status.DaemonEndpoints, updated.Status.Images = desired.DaemonEndpoints, desired.Images
	if _, err := nodes.UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update the status of node %q: %w", a.cfg.Name, err)
	}
	a.lastPost = now
	a.log.Debug("posted the node status", "due", due)
	return nil
}

// renewLease creates or renews the node's Lease.
func (a *Agent) renewLease(ctx context.Context) error {
	leases := a.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	existing, err := leases.Get(ctx, a.cfg.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = leases.Create(ctx, Lease(nil, a.cfg.Name, a.uid, a.clock.Now()), metav1.CreateOptions{})
	case err == nil:
		_, err = leases.Update(ctx, Lease(existing, a.cfg.Name, a.uid, a.clock.Now()), metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("renew the lease of node %q: %w", a.cfg.Name, err)
	}
	return nil
}
