package checkconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// fakeHost is a Host made of maps: files, other paths that exist, commands
// on PATH and what running them prints.
type fakeHost struct {
	files map[string]string
	paths map[string]bool   // directories and other non-file paths that exist
	cmds  map[string]string // name -> path on PATH
	out   map[string]string // "path arg ..." -> output
	fail  map[string]bool   // "path arg ..." -> exits non-zero
}

var _ Host = (*fakeHost)(nil)

func (f *fakeHost) ReadFile(path string) ([]byte, error) {
	if s, ok := f.files[path]; ok {
		return []byte(s), nil
	}
	return nil, fmt.Errorf("open %s: %w", path, fs.ErrNotExist)
}

func (f *fakeHost) Exists(path string) bool {
	if _, ok := f.files[path]; ok || f.paths[path] {
		return true
	}
	for p := range f.files { // a directory holding a file
		if strings.HasPrefix(p, path+"/") {
			return true
		}
	}
	for p := range f.paths {
		if strings.HasPrefix(p, path+"/") {
			return true
		}
	}
	return false
}

func (f *fakeHost) LookPath(name string) (string, error) {
	if p, ok := f.cmds[name]; ok {
		return p, nil
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}

func (f *fakeHost) Output(name string, args ...string) (string, error) {
	key := strings.Join(append([]string{name}, args...), " ")
	if f.fail[key] {
		return "boom\n", errors.New("exit status 1")
	}
	if s, ok := f.out[key]; ok {
		return s, nil
	}
	return "", fmt.Errorf("fake host: unexpected command %q", key)
}

const fakeRelease = "6.1.0-test"

// goodKernelConfig sets every option orch asks for.
const goodKernelConfig = `#
# Automatically generated file; DO NOT EDIT.
CONFIG_NAMESPACES=y
CONFIG_NET_NS=y
CONFIG_PID_NS=y
CONFIG_IPC_NS=y
CONFIG_UTS_NS=y
CONFIG_USER_NS=y
CONFIG_CGROUPS=y
CONFIG_VETH=m
CONFIG_BRIDGE=m
CONFIG_BRIDGE_NETFILTER=m
CONFIG_NETFILTER_XT_MATCH_CONNTRACK=m
CONFIG_NF_NAT=m
CONFIG_IP_NF_NAT=m
CONFIG_NETFILTER_XT_MATCH_STATISTIC=m
CONFIG_NETFILTER_XT_MATCH_COMMENT=m
CONFIG_VXLAN=m
CONFIG_OVERLAY_FS=m
CONFIG_LOCALVERSION="-test"
`

// goodHost has everything orch needs from a host: cgroup v2, a Debian
// kernel and Debian's iptables and kmod (no containerd, runc or CNI
// plugins: orch carries them).
func goodHost() *fakeHost {
	return &fakeHost{
		files: map[string]string{
			"/sys/fs/cgroup/cgroup.controllers":            "cpuset cpu io memory hugetlb pids rdma misc\n",
			"/proc/sys/kernel/osrelease":                   fakeRelease + "\n",
			"/boot/config-" + fakeRelease:                  goodKernelConfig,
			"/proc/filesystems":                            "nodev\tsysfs\nnodev\tcgroup2\nnodev\toverlay\n\text4\n",
			"/proc/cgroups":                                "#subsys_name\thierarchy\tnum_cgroups\tenabled\n",
			"/proc/sys/net/bridge/bridge-nf-call-iptables": "1\n",
			"/proc/sys/net/ipv4/ip_forward":                "1\n",
			"/proc/swaps":                                  "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n",
		},
		paths: map[string]bool{},
		cmds: map[string]string{
			"iptables": "/usr/sbin/iptables", "iptables-restore": "/usr/sbin/iptables-restore", "iptables-save": "/usr/sbin/iptables-save",
			"iptables-legacy-save": "/usr/sbin/iptables-legacy-save", "iptables-nft-save": "/usr/sbin/iptables-nft-save",
			"modprobe": "/usr/sbin/modprobe",
		},
		out: map[string]string{
			"/usr/sbin/iptables --version":   "iptables v1.8.9 (nf_tables)\n",
			"/usr/sbin/iptables-legacy-save": "",
		},
		fail: map[string]bool{},
	}
}

// carriedRuntime is what a release build of orch carries (the payload's
// files in SHA256SUMS order, which is by hash).
func carriedRuntime() RuntimeInfo {
	return RuntimeInfo{ContainerdVersion: "2.4.2", Files: []string{"host-local", "bandwidth", "runc", "portmap",
		"firewall", "containerd-shim-runc-v2", "loopback", "bridge"}}
}

// withoutKernelConfig removes the kernel config and gives the host what a
// running kernel shows instead.
func (f *fakeHost) withoutKernelConfig() *fakeHost {
	delete(f.files, "/boot/config-"+fakeRelease)
	for _, ns := range []string{"net", "pid", "ipc", "uts", "user"} {
		f.paths["/proc/self/ns/"+ns] = true
	}
	for _, m := range []string{"veth", "bridge", "xt_conntrack", "nf_nat", "iptable_nat", "xt_statistic", "xt_comment", "vxlan"} {
		f.paths["/sys/module/"+m] = true
	}
	return f
}
