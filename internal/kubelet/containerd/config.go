package containerd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"orch/internal/kubelet/containerd/payload"
	"orch/internal/kubelet/images"
)

// Config says where the supervised containerd keeps its files and how its
// CRI plugin runs pods. NewConfig fills it from the agent's data dir.
type Config struct {
	// Binary is orch's own executable, which runs containerd as
	// `Binary containerd --config ConfigPath` (this process's executable
	// when empty).
	Binary string
	// RuntimeDir is where the supervisor installs the runtime orch carries
	// (runc, the shim, the CNI plugins; package payload) at each start:
	// data-dir/agent/runtime, whose current/bin the config names.
	RuntimeDir   string
	ConfigPath   string // data-dir/agent/etc/containerd/config.toml, written by the supervisor
	Root         string // persistent state: content, snapshots, metadata (data-dir/agent/containerd)
	State        string // runtime state, gone at reboot (/run/orch/containerd)
	Address      string // the gRPC socket, State/containerd.sock
	LogPath      string // containerd's stdout and stderr (data-dir/agent/containerd/containerd.log)
	SandboxImage string // the pod sandbox image (the built-in pause image)
	CNIBinDir    string // CNI plugin executables (RuntimeDir/current/bin: the ones orch carries)
	CNIConfDir   string // CNI network configs (data-dir/agent/etc/cni/net.d)
	ImagesDir    string // air-gap image archives (data-dir/agent/images)
	ImportState  string // what Importer imported from where (data-dir/agent/containerd/orch-imports.json)
	// CertsDir is the CRI registry config_path: a directory per registry
	// host (certs.d/HOST[:PORT]/hosts.toml, with its CA and client
	// certificates) that containerd reads at each pull
	// (data-dir/agent/etc/containerd/certs.d). docs/operations.md says how.
	CertsDir string
	// SystemdCgroup selects runc's systemd cgroup driver; the kubelet must
	// use the same driver. NewConfig sets it with SystemdIsInit.
	SystemdCgroup bool
	// RestrictOOMScoreAdj makes the CRI plugin clamp the OOM score
	// adjustments it asks for (-998 for sandboxes, down to -997 for pods) to
	// no lower than containerd's own. It must be set where orch runs without
	// CAP_SYS_RESOURCE (a container, a restricted VM): lowering the score
	// needs it, and runc fails every sandbox otherwise ("failed to update
	// /proc/self/oom_score_adj: Permission denied"). NewConfig sets it when
	// this process lacks the capability.
	RestrictOOMScoreAdj bool
}

// DefaultState is where containerd's runtime state and socket live.
const DefaultState = "/run/orch/containerd"

// NewConfig returns the configuration for the containerd of the agent whose
// data dir is dataDir (e.g. /var/lib/orch).
func NewConfig(dataDir string) Config {
	agent := filepath.Join(dataDir, "agent")
	root := filepath.Join(agent, "containerd")
	return Config{
		RuntimeDir:    filepath.Join(agent, "runtime"),
		ConfigPath:    filepath.Join(agent, "etc", "containerd", "config.toml"),
		Root:          root,
		State:         DefaultState,
		Address:       filepath.Join(DefaultState, "containerd.sock"),
		LogPath:       filepath.Join(root, "containerd.log"),
		SandboxImage:  images.PauseRef,
		CNIBinDir:     filepath.Join(agent, "runtime", payload.Current, "bin"),
		CNIConfDir:    filepath.Join(agent, "etc", "cni", "net.d"),
		ImagesDir:     filepath.Join(agent, "images"),
		ImportState:   filepath.Join(root, "orch-imports.json"),
		CertsDir:      filepath.Join(agent, "etc", "containerd", "certs.d"),
		SystemdCgroup: SystemdIsInit(),

		RestrictOOMScoreAdj: !hasCapability(capSysResource),
	}
}

// WithState moves the runtime state and socket to dir (e.g. for a second
// agent on the same machine, or a test).
func (c Config) WithState(dir string) Config {
	c.State, c.Address = dir, filepath.Join(dir, "containerd.sock")
	return c
}

// SystemdIsInit reports whether systemd is PID 1 and booted the system
// (sd_booted: /run/systemd/system exists). Only then can runc's systemd
// cgroup driver work — it asks systemd over D-Bus for a scope per
// container — and only then does systemd own the cgroup tree, so that
// cgroupfs writes would fight it. This is independent of cgroup v1 or v2:
// on a machine (or container) whose init is something else, cgroupfs is the
// only driver that works, whatever the hierarchy.
func SystemdIsInit() bool {
	comm, err := os.ReadFile("/proc/1/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "systemd" {
		return false
	}
	_, err = os.Stat("/run/systemd/system")
	return err == nil
}

// capSysResource is CAP_SYS_RESOURCE's bit number.
const capSysResource = 24

// hasCapability reports whether this process has capability bit in its
// effective set (from /proc/self/status; false when unreadable).
func hasCapability(bit uint) bool {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			return err == nil && caps&(1<<bit) != 0
		}
	}
	return false
}

// BinDir is where runc and the shim are: the payload the running orch
// installed (RuntimeDir/current/bin).
func (c Config) BinDir() string { return filepath.Join(c.RuntimeDir, payload.Current, "bin") }

// TOML renders the configuration file of orch's containerd (2.x, config
// version 4). It imports no other file (containerd's default would be
// /etc/containerd/conf.d, a host containerd's).
func (c Config) TOML() []byte {
	q := strconv.Quote
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by orch at every start; edits are overwritten.\nversion = 4\n")
	fmt.Fprintf(&b, "root = %s\nstate = %s\n", q(c.Root), q(c.State))
	fmt.Fprintf(&b, "\n[plugins]\n")
	// Its sockets: gRPC for the kubelet and orch, ttrpc for the shims.
	fmt.Fprintf(&b, "  [plugins.\"io.containerd.server.v1.grpc\"]\n    address = %s\n", q(c.Address))
	fmt.Fprintf(&b, "  [plugins.\"io.containerd.server.v1.ttrpc\"]\n    address = %s\n", q(c.Address+".ttrpc"))
	// The opt plugin would otherwise create /opt/containerd.
	fmt.Fprintf(&b, "  [plugins.\"io.containerd.internal.v1.opt\"]\n    path = %s\n", q(filepath.Join(c.Root, "opt")))
	// NRI would listen on /var/run/nri/nri.sock, which a host containerd
	// may own; orch loads no NRI plugins.
	fmt.Fprintf(&b, "  [plugins.\"io.containerd.nri.v1.nri\"]\n    disable = true\n")
	fmt.Fprintf(&b, "  [plugins.\"io.containerd.cri.v1.images\"]\n")
	fmt.Fprintf(&b, "    snapshotter = \"overlayfs\"\n")
	fmt.Fprintf(&b, "    [plugins.\"io.containerd.cri.v1.images\".pinned_images]\n      sandbox = %s\n", q(c.SandboxImage))
	fmt.Fprintf(&b, "    [plugins.\"io.containerd.cri.v1.images\".registry]\n      config_path = %s\n", q(c.CertsDir))
	fmt.Fprintf(&b, "  [plugins.\"io.containerd.cri.v1.runtime\"]\n")
	fmt.Fprintf(&b, "    enable_selinux = false\n")
	fmt.Fprintf(&b, "    restrict_oom_score_adj = %t\n", c.RestrictOOMScoreAdj)
	fmt.Fprintf(&b, "    cdi_spec_dirs = []\n")
	fmt.Fprintf(&b, "    [plugins.\"io.containerd.cri.v1.runtime\".containerd]\n      default_runtime_name = \"runc\"\n")
	fmt.Fprintf(&b, "      [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc]\n")
	fmt.Fprintf(&b, "        runtime_type = \"io.containerd.runc.v2\"\n")
	fmt.Fprintf(&b, "        runtime_path = %s\n", q(filepath.Join(c.BinDir(), "containerd-shim-runc-v2")))
	fmt.Fprintf(&b, "        [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc.options]\n")
	fmt.Fprintf(&b, "          BinaryName = %s\n", q(filepath.Join(c.BinDir(), "runc")))
	fmt.Fprintf(&b, "          SystemdCgroup = %t\n", c.SystemdCgroup)
	// runc's own state, apart from any other containerd on the machine.
	fmt.Fprintf(&b, "          Root = %s\n", q(filepath.Join(c.State, "runc")))
	fmt.Fprintf(&b, "    [plugins.\"io.containerd.cri.v1.runtime\".cni]\n")
	fmt.Fprintf(&b, "      bin_dirs = [%s]\n      conf_dir = %s\n      max_conf_num = 1\n", q(c.CNIBinDir), q(c.CNIConfDir))
	// Streaming (exec, attach, port-forward) on loopback, on a free port.
	fmt.Fprintf(&b, "  [plugins.\"io.containerd.grpc.v1.cri\"]\n")
	fmt.Fprintf(&b, "    stream_server_address = \"127.0.0.1\"\n    stream_server_port = \"0\"\n")
	return b.Bytes()
}
