package volumes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"orch/internal/kubelet/podconfig"
)

// Plugin directory names under <pod dir>/volumes, as upstream's kubelet
// names them (so tools that know the kubelet's layout find them).
const (
	PluginEmptyDir    = "kubernetes.io~empty-dir"
	PluginConfigMap   = "kubernetes.io~configmap"
	PluginSecret      = "kubernetes.io~secret"
	PluginProjected   = "kubernetes.io~projected"
	PluginDownwardAPI = "kubernetes.io~downward-api"
)

// Manager prepares the volumes of the pods of one node under Root
// (<data-dir>/agent/kubelet): <Root>/pods/<uid>/volumes/<plugin>/<name>.
// It is safe for concurrent use; calls for one pod are serialized.
type Manager struct {
	// Root is the kubelet's root directory.
	Root string
	// Allocatable is the node's allocatable resources: they stand in for
	// missing limits in downward-API resourceFieldRefs and bound the size
	// of memory-backed volumes.
	Allocatable corev1.ResourceList
	// Clock decides when service account tokens are refreshed and names
	// the timestamped directories of atomically written volumes.
	Clock clock.PassiveClock
	// Images makes image volumes; without it they are unsupported.
	Images ImageMounter

	client kubernetes.Interface
	log    *slog.Logger

	mu     sync.Mutex
	pods   map[types.UID]*podState
	noSwap noSwapState
}

// podState is what the manager remembers of one pod between syncs.
type podState struct {
	mu sync.Mutex
	// tokens are the service account tokens of projected volumes by
	// tokenKey.
	tokens map[string]*authenticationv1.TokenRequest
	// claims are the resolved persistentVolumeClaim volumes by volume
	// name: a bound claim does not change, so it is looked up once.
	claims map[string]podconfig.Volume
	// certs are the podCertificate projections by "<volume>/<source>".
	certs map[string]*podCertificate
}

// New is a Manager of the pods under root that reads ConfigMaps, Secrets,
// claims and volumes and requests tokens through client.
func New(root string, client kubernetes.Interface, log *slog.Logger) *Manager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		Root:   root,
		Clock:  clock.RealClock{},
		client: client,
		log:    log,
		pods:   map[types.UID]*podState{},
	}
}

// PodDir is the pod's directory, <Root>/pods/<uid>.
func (m *Manager) PodDir(uid types.UID) string {
	return filepath.Join(m.Root, "pods", string(uid))
}

// VolumeDir is where a volume of a plugin (PluginEmptyDir, …) of the pod
// lives: <Root>/pods/<uid>/volumes/<plugin>/<name>.
func (m *Manager) VolumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(m.PodDir(uid), "volumes", plugin, name)
}

func (m *Manager) state(uid types.UID) *podState {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps, ok := m.pods[uid]
	if !ok {
		ps = &podState{tokens: map[string]*authenticationv1.TokenRequest{}, claims: map[string]podconfig.Volume{},
			certs: map[string]*podCertificate{}}
		m.pods[uid] = ps
	}
	return ps
}

// Setup makes every volume of pod ready and returns them by volume name.
// It is idempotent and cheap when nothing changed: the pod workers call it
// on every sync, and that is how configMap, secret, projected and
// downwardAPI volumes follow changes to their sources (rewritten
// atomically, and only when their content differs). It does at most one
// GET per object the pod refers to.
//
// The error joins a *MountError for every volume that is not ready (see
// MountErrors); the volumes that are ready are returned all the same.
func (m *Manager) Setup(ctx context.Context, pod *corev1.Pod) (map[string]podconfig.Volume, error) {
	if err := checkName("pod UID", string(pod.UID)); err != nil {
		return nil, err
	}
	ps := m.state(pod.UID)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	s := &setup{
		m: m, ctx: ctx, pod: pod, ps: ps,
		log:        m.log.With("pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID),
		configMaps: map[string]getResult[*corev1.ConfigMap]{},
		secrets:    map[string]getResult[*corev1.Secret]{},
	}
	out := make(map[string]podconfig.Volume, len(pod.Spec.Volumes))
	var errs []error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		vol, err := s.volume(v)
		if err != nil {
			errs = append(errs, &MountError{Volume: v.Name, Err: err})
			continue
		}
		out[v.Name] = vol
	}
	return out, errors.Join(errs...)
}

// setup is one Setup call: it caches what it GETs so that volumes
// sharing a source fetch it once.
type setup struct {
	m          *Manager
	ctx        context.Context
	pod        *corev1.Pod
	ps         *podState
	log        *slog.Logger
	configMaps map[string]getResult[*corev1.ConfigMap]
	secrets    map[string]getResult[*corev1.Secret]
}

type getResult[T any] struct {
	obj T
	err error
}

func (s *setup) volume(v *corev1.Volume) (podconfig.Volume, error) {
	if err := checkName("volume name", v.Name); err != nil {
		return podconfig.Volume{}, err
	}
	src := &v.VolumeSource
	switch {
	case src.EmptyDir != nil:
		return s.emptyDir(v.Name, src.EmptyDir)
	case src.HostPath != nil:
		return s.hostPath(src.HostPath)
	case src.ConfigMap != nil:
		return s.configMapVolume(v.Name, src.ConfigMap)
	case src.Secret != nil:
		return s.secretVolume(v.Name, src.Secret)
	case src.DownwardAPI != nil:
		return s.downwardAPIVolume(v.Name, src.DownwardAPI)
	case src.Projected != nil:
		return s.projectedVolume(v.Name, src.Projected)
	case src.PersistentVolumeClaim != nil:
		return s.claim(v.Name, src.PersistentVolumeClaim, nil)
	case src.Ephemeral != nil:
		return s.ephemeralClaim(v)
	case src.Image != nil && s.m.Images != nil:
		return s.imageVolume(v.Name, src.Image)
	}
	if kind := sourceKind(src); kind != "" {
		return podconfig.Volume{}, fmt.Errorf("%s volumes are %w", kind, podconfig.ErrUnsupported)
	}
	// A volume without a source is an emptyDir, as upstream.
	return s.emptyDir(v.Name, &corev1.EmptyDirVolumeSource{})
}

// checkName refuses names that would step out of the pod's directories.
func checkName(what, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return podconfig.Invalidf("%s %q cannot name a directory", what, name)
	}
	return nil
}

// TearDown unmounts and removes everything of the pod with uid: its
// volumes and the whole pod directory. It removes nothing while a mount
// below the pod directory remains.
func (m *Manager) TearDown(uid types.UID) error {
	if err := checkName("pod UID", string(uid)); err != nil {
		return err
	}
	ps := m.state(uid)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	dir := m.PodDir(uid)
	if err := unmountAll(dir); err != nil {
		return fmt.Errorf("tear down volumes of pod %s: %w", uid, err)
	}
	if m.Images != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := m.Images.ReleaseImages(ctx, uid)
		cancel()
		if err != nil {
			return fmt.Errorf("tear down volumes of pod %s: %w", uid, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("tear down volumes of pod %s: %w", uid, err)
	}
	m.mu.Lock()
	delete(m.pods, uid)
	m.mu.Unlock()
	return nil
}

// PodsOnDisk lists the UIDs of the pods that have a directory under
// <Root>/pods, for orphan cleanup.
func (m *Manager) PodsOnDisk() ([]types.UID, error) {
	entries, err := os.ReadDir(filepath.Join(m.Root, "pods"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var uids []types.UID
	for _, e := range entries {
		if e.IsDir() {
			uids = append(uids, types.UID(e.Name()))
		}
	}
	return uids, nil
}
