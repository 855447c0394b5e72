package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"orch/internal/join"
	"orch/internal/kubelet/containerd"
	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/imagegc"
	"orch/internal/kubelet/images"
	"orch/internal/kubelet/metrics"
	"orch/internal/kubelet/node"
	"orch/internal/kubelet/podconfig"
	"orch/internal/kubelet/pods"
	"orch/internal/kubelet/server"
	"orch/internal/kubelet/sysctls"
	"orch/internal/localpath"
	"orch/internal/network"
	"orch/internal/pki"
	"orch/internal/run"
)

// kubelet is what runs once the container runtime is connected: the Node's
// registration and status, the pod network's CNI config, the pod workers
// and image garbage collection, which spares the images keep names; km
// is the kubelet's metrics, views mounts image volumes (nil: none).
func kubelet(c checked, nodeCfg node.Config, creds *join.Credentials, client kubernetes.Interface, rt *cri.Runtime, km *metrics.Kubelet, keep func() []string, views pods.ImageViews, log *slog.Logger) ([]run.Named, error) {
	cluster := creds.Cluster()
	sys, err := node.ReadSystem(c.DataDir)
	if err != nil {
		return nil, err
	}
	status := node.Status(nodeCfg, sys, nil, time.Now())
	workers := pods.New(client, podconfig.Node{
		Name:           c.NodeName,
		HostIPs:        ipStrings(c.ips),
		Allocatable:    status.Allocatable,
		MemoryCapacity: sys.MemoryBytes,
		ClusterDomain:  cluster.Domain,
		CgroupV2:       cgroupV2(),
		SeccompDefault: c.SeccompDefault,
		// Localhost profiles are read from here, as upstream's
		// <root-dir>/seccomp.
		SeccompProfileRoot: filepath.Join(c.DataDir, "agent", "kubelet", "seccomp"),
	}, rt, log)
	if workers.Sysctls, err = sysctls.New(sys.KernelVersion, c.AllowedUnsafeSysctls); err != nil {
		return nil, fmt.Errorf("orch agent: %w", err)
	}
	workers.RootDir = filepath.Join(c.DataDir, "agent", "kubelet")
	nodeCfg.KubeletDir = workers.RootDir // the nodefs
	workers.StaticPodDir = filepath.Join(c.DataDir, "agent", "pod-manifests")
	if err := os.MkdirAll(workers.StaticPodDir, 0o755); err != nil {
		return nil, fmt.Errorf("orch agent: %w", err)
	}
	workers.DNS = podconfig.ClusterDNS{Servers: []string{cluster.DNS}, Domain: cluster.Domain}
	workers.LogRoot = podLogRoot(c.DataDir)
	workers.ResolvConf = c.ResolvConf
	workers.SystemdCgroups = containerd.SystemdIsInit()
	workers.Metrics = km
	workers.ImageViews = views
	// Pods made again (after a reboot) keep their addresses where
	// host-local can, so the Services' endpoints still hold while the
	// server is away.
	workers.Addresses = &network.HostLocalAddresses{Dir: filepath.Join(cniConfig(c).Bridge.IPAMDataDir, network.DefaultNetworkName)}
	api, err := server.New(server.Config{
		Addr:         fmt.Sprintf(":%d", c.KubeletPort),
		TLS:          servingTLS(creds, c.TLS),
		TokenReviews: client.AuthenticationV1().TokenReviews(),
		// The node's identity may create reviews (upstream's NodeRules).
		SubjectAccessReviews: client.AuthorizationV1().SubjectAccessReviews(),
		Runtime:              rt,
		Containers:           server.NewCRIFinder(rt, workers.Pods),
		Pods:                 workers.Pods,
		NodeName:             c.NodeName,
		RootDir:              c.DataDir,
		Metrics:              km,
		Log:                  log.With("component", "kubelet-api"),
	})
	if err != nil {
		return nil, err
	}
	cni := network.NewCNIConfigWriter(cniConfig(c), client, rt, log)
	netParts, err := clusterNetwork(c, cluster, creds, cni, km, log)
	if err != nil {
		return nil, err
	}
	parts := []run.Named{
		{Name: "kubelet API", Runnable: api},
		{Name: "node status", Runnable: node.New(nodeCfg, client, rt, nil, log)},
		{Name: "pod network config", Runnable: cni},
	}
	parts = append(parts, netParts...)
	// The directories of this node's released local-path volumes.
	localPathClient, err := componentClient(creds, join.LocalPathUser, "local-path clean-up", log)
	if err != nil {
		return nil, err
	}
	return append(parts,
		run.Named{Name: "pods", Runnable: workers},
		run.Named{Name: "image garbage collection", Runnable: imageGC(c.NodeName, nodeCfg.ImageFsDir, client, rt, keep, log)},
		run.Named{Name: "local-path clean-up", Runnable: localpath.NewCleaner(localPathClient, c.NodeName, log)},
	), nil
}

// imageGC collects unused images when the image file system (dir, else
// the one the runtime reports) is full, sparing the images keep names and
// the pause image; its events go to the Node.
func imageGC(nodeName, dir string, client kubernetes.Interface, rt *cri.Runtime, keep func() []string, log *slog.Logger) run.Runnable {
	usage := func() (uint64, uint64, error) {
		fsDir := dir
		if fsDir == "" {
			var err error
			if fsDir, err = node.RuntimeImageFs(context.Background(), rt); err != nil {
				return 0, 0, err
			}
		}
		st, err := node.StatFS(fsDir)
		return uint64(st.Bytes), uint64(st.AvailableBytes), err
	}
	kept := func() []string { return append(keep(), images.PauseRef) }
	return run.Func(func(ctx context.Context) error {
		broadcaster := record.NewBroadcaster(record.WithContext(ctx))
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
		defer broadcaster.Shutdown()
		recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: nodeName})
		ref := &corev1.ObjectReference{Kind: "Node", Name: nodeName, UID: types.UID(nodeName)}
		return imagegc.New(rt, imagegc.Config{Usage: usage, Keep: kept}, recorder, ref, log.With("component", "image-gc")).Start(ctx)
	})
}

// podLogRoot is where the pods' container logs go: /var/log/pods, as
// upstream's, for the default data dir; under the data dir for another
// (a second agent on the machine, a test), so agents never share it.
func podLogRoot(dataDir string) string {
	if filepath.Clean(dataDir) == DefaultDataDir {
		return "/var/log/pods"
	}
	return filepath.Join(dataDir, "agent", "pod-logs")
}

// cgroupV2 reports whether /sys/fs/cgroup is the unified hierarchy.
func cgroupV2() bool {
	var fs unix.Statfs_t
	return unix.Statfs("/sys/fs/cgroup", &fs) == nil && fs.Type == unix.CGROUP2_SUPER_MAGIC
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

// servingTLS is the kubelet API's TLS: the node's serving certificate,
// with the versions and suites opts allow.
func servingTLS(creds *join.Credentials, opts pki.TLSOptions) *tls.Config {
	c := creds.ServingTLSConfig()
	opts.Apply(c)
	return c
}
