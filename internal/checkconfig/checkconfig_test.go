package checkconfig

import (
	"bytes"
	"compress/gzip"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// errNoPayload is what payload.Manifest says of a binary built without
// the runtime.
var errNoPayload = errors.New("this orch binary carries no node runtime (runc, the shim, the CNI plugins): build it with `make build`")

// want is what one named result must be; the rest must be OK.
type want struct {
	status Status
	found  string // a substring of Found
	fix    string // a substring of Fix
}

func TestRun(t *testing.T) {
	v1Mounts := "sysfs /sys sysfs rw 0 0\n" +
		"cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0\n" +
		"cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n" +
		"cgroup /sys/fs/cgroup/pids cgroup rw,pids 0 0\n" +
		"cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
	tests := []struct {
		name   string
		change func(f *fakeHost)
		opts   Options
		want   map[string]want
	}{
		{name: "good host", change: func(*fakeHost) {}},
		{
			name:   "cgroup v2 without memory",
			change: func(f *fakeHost) { f.files["/sys/fs/cgroup/cgroup.controllers"] = "cpuset cpu io pids\n" },
			want:   map[string]want{"cgroup controller memory": {Missing, "not in /sys/fs/cgroup/cgroup.controllers", "CONFIG_MEMCG"}},
		},
		{
			name:   "cgroup v2 without io and cpuset",
			change: func(f *fakeHost) { f.files["/sys/fs/cgroup/cgroup.controllers"] = "cpu memory pids\n" },
			want: map[string]want{
				"cgroup controller io":     {Warning, "not in", "enable the io controller"},
				"cgroup controller cpuset": {Warning, "not in", "enable the cpuset controller"},
			},
		},
		{
			name: "cgroup v1 without cpuset and blkio",
			change: func(f *fakeHost) {
				delete(f.files, "/sys/fs/cgroup/cgroup.controllers")
				f.files["/proc/self/mounts"] = v1Mounts
			},
			want: map[string]want{
				"cgroups":                  {OK, "v1", ""},
				"cgroup controller cpu":    {OK, "mounted at /sys/fs/cgroup/cpu,cpuacct", ""},
				"cgroup controller cpuset": {Warning, "cpuset not mounted", "mount -t cgroup -o cpuset"},
				"cgroup controller io":     {Warning, "blkio not mounted", "enable cgroup v2"},
			},
		},
		{
			name: "cgroup v1 without memory",
			change: func(f *fakeHost) {
				delete(f.files, "/sys/fs/cgroup/cgroup.controllers")
				f.files["/proc/self/mounts"] = strings.Replace(v1Mounts, "rw,memory", "rw,freezer", 1) +
					"cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\ncgroup /sys/fs/cgroup/blkio cgroup rw,blkio 0 0\n"
			},
			want: map[string]want{"cgroup controller memory": {Missing, "memory not mounted", "mount -t cgroup -o memory"}},
		},
		{
			name: "no cgroups",
			change: func(f *fakeHost) {
				delete(f.files, "/sys/fs/cgroup/cgroup.controllers")
				f.files["/proc/self/mounts"] = "sysfs /sys sysfs rw 0 0\n"
			},
			want: map[string]want{"cgroups": {Missing, "no cgroup filesystem", "mount -t cgroup2"}},
		},
		{
			name: "kernel without veth, user namespaces and vxlan",
			change: func(f *fakeHost) {
				c := strings.Replace(goodKernelConfig, "CONFIG_VETH=m", "# CONFIG_VETH is not set", 1)
				c = strings.Replace(c, "CONFIG_USER_NS=y", "# CONFIG_USER_NS is not set", 1)
				f.files["/boot/config-"+fakeRelease] = strings.Replace(c, "CONFIG_VXLAN=m\n", "", 1)
			},
			want: map[string]want{
				"CONFIG_VETH":    {Missing, "not set", "CONFIG_VETH=y or =m"},
				"CONFIG_USER_NS": {Warning, "not set", "CONFIG_USER_NS=y (Debian"},
				"CONFIG_VXLAN":   {Warning, "not set", "modprobe vxlan"},
			},
		},
		{
			name: "nf_tables NAT instead of iptable_nat",
			change: func(f *fakeHost) {
				f.files["/boot/config-"+fakeRelease] = strings.Replace(goodKernelConfig, "CONFIG_IP_NF_NAT=m", "CONFIG_NFT_NAT=y", 1)
			},
			want: map[string]want{"CONFIG_IP_NF_NAT or CONFIG_NFT_NAT": {OK, "CONFIG_NFT_NAT=y", ""}},
		},
		{
			name:   "kernel config unreadable, everything observable",
			change: func(f *fakeHost) { f.withoutKernelConfig() },
			want: map[string]want{
				"kernel config":           {Warning, "not found at /proc/config.gz or /boot/config-" + fakeRelease, "--kernel-config FILE"},
				"CONFIG_NET_NS":           {OK, "seen /proc/self/ns/net", ""},
				"CONFIG_OVERLAY_FS":       {OK, "overlay in /proc/filesystems", ""},
				"CONFIG_BRIDGE_NETFILTER": {OK, "seen /proc/sys/net/bridge", ""},
			},
		},
		{
			name: "kernel config unreadable, no network namespaces, veth not loaded",
			change: func(f *fakeHost) {
				f.withoutKernelConfig()
				delete(f.paths, "/proc/self/ns/net")
				delete(f.paths, "/sys/module/veth")
			},
			want: map[string]want{
				"kernel config": {Warning, "not found", "modprobe configs"},
				"CONFIG_NET_NS": {Missing, "no /proc/self/ns/net", "CONFIG_NET_NS=y ("},
				"CONFIG_VETH":   {Warning, "no /sys/module/veth", "modprobe veth"},
			},
		},
		{
			name: "kernel config unreadable, veth in modules.dep",
			change: func(f *fakeHost) {
				f.withoutKernelConfig()
				delete(f.paths, "/sys/module/veth")
				f.files["/lib/modules/"+fakeRelease+"/modules.dep"] = "kernel/drivers/net/veth.ko.xz:\n"
			},
			want: map[string]want{
				"kernel config": {Warning, "not found", ""},
				"CONFIG_VETH":   {OK, "module veth available", ""},
			},
		},
		{
			name:   "--kernel-config that cannot be read",
			change: func(f *fakeHost) { f.withoutKernelConfig() },
			opts:   Options{KernelConfig: "/root/nope.config"},
			want:   map[string]want{"kernel config": {Missing, "cannot read /root/nope.config", "give --kernel-config a readable kernel config"}},
		},
		{
			name: "--kernel-config gzipped",
			change: func(f *fakeHost) {
				delete(f.files, "/boot/config-"+fakeRelease)
				f.files["/tmp/config.gz"] = gzipped(t, strings.Replace(goodKernelConfig, "CONFIG_BRIDGE=m", "# CONFIG_BRIDGE is not set", 1))
			},
			opts: Options{KernelConfig: "/tmp/config.gz"},
			want: map[string]want{
				"kernel config": {OK, "read /tmp/config.gz", ""},
				"CONFIG_BRIDGE": {Missing, "not set", "modprobe bridge"},
			},
		},
		{
			name: "overlay not loaded but available",
			change: func(f *fakeHost) {
				f.files["/proc/filesystems"] = "nodev\tsysfs\n\text4\n"
			},
			want: map[string]want{"overlayfs": {Warning, "module overlay available but not loaded", "modprobe overlay"}},
		},
		{
			name: "overlay nowhere",
			change: func(f *fakeHost) {
				f.files["/proc/filesystems"] = "nodev\tsysfs\n\text4\n"
				f.files["/boot/config-"+fakeRelease] = strings.Replace(goodKernelConfig, "CONFIG_OVERLAY_FS=m", "# CONFIG_OVERLAY_FS is not set", 1)
			},
			want: map[string]want{
				"overlayfs":         {Missing, "no overlay module", "modprobe overlay; echo overlay >> /etc/modules-load.d/orch.conf"},
				"CONFIG_OVERLAY_FS": {Missing, "not set", "CONFIG_OVERLAY_FS=y or =m"},
			},
		},
		{
			name:   "br_netfilter not loaded, module there",
			change: func(f *fakeHost) { delete(f.files, "/proc/sys/net/bridge/bridge-nf-call-iptables") },
			want:   map[string]want{"br_netfilter": {Warning, "orch runs modprobe br_netfilter at start", "modprobe br_netfilter; echo br_netfilter >> /etc/modules-load.d/orch.conf"}},
		},
		{
			name: "br_netfilter not loaded, no modprobe",
			change: func(f *fakeHost) {
				delete(f.files, "/proc/sys/net/bridge/bridge-nf-call-iptables")
				delete(f.cmds, "modprobe")
			},
			want: map[string]want{"br_netfilter": {Missing, "no modprobe on PATH", "apt-get install kmod; modprobe br_netfilter"}},
		},
		{
			name: "br_netfilter not in the kernel",
			change: func(f *fakeHost) {
				delete(f.files, "/proc/sys/net/bridge/bridge-nf-call-iptables")
				f.files["/boot/config-"+fakeRelease] = strings.Replace(goodKernelConfig, "CONFIG_BRIDGE_NETFILTER=m", "", 1)
			},
			want: map[string]want{
				"br_netfilter":            {Missing, "no br_netfilter module", "CONFIG_BRIDGE_NETFILTER=y or =m"},
				"CONFIG_BRIDGE_NETFILTER": {Missing, "not set", "modprobe br_netfilter"},
			},
		},
		{
			name:   "bridge-nf-call-iptables off",
			change: func(f *fakeHost) { f.files["/proc/sys/net/bridge/bridge-nf-call-iptables"] = "0\n" },
			want:   map[string]want{"br_netfilter": {OK, "orch sets it to 1 at start", ""}},
		},
		{
			name:   "ip forwarding off",
			change: func(f *fakeHost) { f.files["/proc/sys/net/ipv4/ip_forward"] = "0\n" },
			want:   map[string]want{"net.ipv4.ip_forward": {Warning, "0 (forwarding off)", "sysctl -w net.ipv4.ip_forward=1"}},
		},
		{
			name: "swap on",
			change: func(f *fakeHost) {
				f.files["/proc/swaps"] += "/dev/sda2                               partition\t1048572\t\t0\t\t-2\n"
			},
			want: map[string]want{"swap": {Warning, "on (/dev/sda2)", "swapoff -a"}},
		},
		{
			name: "no iptables",
			change: func(f *fakeHost) {
				delete(f.cmds, "iptables")
				delete(f.cmds, "iptables-restore")
				delete(f.cmds, "iptables-save")
			},
			want: map[string]want{
				"iptables":                        {Missing, "not found on PATH", "apt-get install iptables"},
				"iptables-restore, iptables-save": {Missing, "iptables-restore, iptables-save", "apt-get install iptables"},
			},
		},
		{
			name:   "no iptables-restore",
			change: func(f *fakeHost) { delete(f.cmds, "iptables-restore") },
			want:   map[string]want{"iptables-restore, iptables-save": {Missing, "not on PATH: iptables-restore", "apt-get install iptables"}},
		},
		{
			name:   "iptables --version fails",
			change: func(f *fakeHost) { f.fail["/usr/sbin/iptables --version"] = true },
			want:   map[string]want{"iptables": {Warning, "`iptables --version` failed", "apt-get install --reinstall iptables"}},
		},
		{
			name: "legacy backend with nf_tables rules left",
			change: func(f *fakeHost) {
				f.out["/usr/sbin/iptables --version"] = "iptables v1.8.7 (legacy)\n"
				f.out["/usr/sbin/iptables-nft-save"] = "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -p tcp --dport 22 -j DROP\nCOMMIT\n"
			},
			want: map[string]want{
				"iptables":          {OK, "v1.8.7, legacy backend", ""},
				"iptables backends": {Warning, "1 rules in the nf_tables backend while iptables uses legacy", "update-alternatives --set iptables /usr/sbin/iptables-nft"},
			},
		},
		{
			name: "nf_tables backend with legacy rules left",
			change: func(f *fakeHost) {
				f.out["/usr/sbin/iptables-legacy-save"] = "*nat\n-A POSTROUTING -j MASQUERADE\n-A OUTPUT -j X\nCOMMIT\n"
			},
			want: map[string]want{"iptables backends": {Warning, "2 rules in the legacy backend", "iptables-legacy-save shows them"}},
		},
		{
			name: "node runtime carried in the binary",
			opts: Options{Runtime: carriedRuntime()},
			want: map[string]want{"node runtime": {OK, "containerd 2.4.2 built in; runc, containerd-shim-runc-v2, bridge, host-local, " +
				"loopback, portmap, bandwidth, firewall carried in the binary", ""}},
		},
		{
			name: "node runtime without the optional plugins",
			opts: Options{Runtime: RuntimeInfo{ContainerdVersion: "2.4.2",
				Files: []string{"runc", "containerd-shim-runc-v2", "bridge", "host-local", "loopback", "portmap"}}},
			want: map[string]want{"node runtime": {OK, "runc, containerd-shim-runc-v2, bridge, host-local, loopback, portmap carried", ""}},
		},
		{
			name: "a binary built without the runtime payload",
			opts: Options{Runtime: RuntimeInfo{ContainerdVersion: "2.4.2", Err: errNoPayload}},
			want: map[string]want{"node runtime": {Missing, "containerd 2.4.2 built in, but this binary carries no runtime",
				"use a release build of orch (make build builds the runtime into it), or run agents with " +
					"--container-runtime-endpoint set to the socket of a CRI runtime you run yourself"}},
		},
		{
			name: "a runtime payload without runc",
			opts: Options{Runtime: RuntimeInfo{ContainerdVersion: "2.4.2",
				Files: slices.DeleteFunc(carriedRuntime().Files, func(f string) bool { return f == "runc" })}},
			want: map[string]want{"node runtime": {Missing, "but the runtime this binary carries lacks runc", "use a release build of orch"}},
		},
		{
			name: "a runtime payload with the optional plugins only",
			opts: Options{Runtime: RuntimeInfo{ContainerdVersion: "2.4.2", Files: []string{"bandwidth", "firewall"}}},
			want: map[string]want{"node runtime": {Missing,
				"lacks runc, containerd-shim-runc-v2, bridge, host-local, loopback, portmap", "--container-runtime-endpoint"}},
		},
		{
			name: "Fedora: dnf's package names",
			change: func(f *fakeHost) {
				f.files["/etc/os-release"] = "NAME=\"Fedora Linux\"\nID=fedora\n"
				delete(f.cmds, "iptables")
				delete(f.cmds, "modprobe")
				delete(f.files, "/proc/sys/net/bridge/bridge-nf-call-iptables")
			},
			want: map[string]want{
				"iptables":     {Missing, "not found on PATH", "dnf install iptables-nft"},
				"br_netfilter": {Missing, "no modprobe on PATH", "dnf install kmod; modprobe br_netfilter"},
			},
		},
		{
			name: "Rocky Linux: the RHEL family's commands",
			change: func(f *fakeHost) {
				f.files["/etc/os-release"] = "ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n"
				f.fail["/usr/sbin/iptables --version"] = true
				delete(f.cmds, "iptables-save")
			},
			want: map[string]want{
				"iptables":                        {Warning, "`iptables --version` failed", "dnf reinstall iptables-nft"},
				"iptables-restore, iptables-save": {Missing, "not on PATH: iptables-save", "dnf install iptables-nft"},
			},
		},
		{
			name: "Alpine: apk",
			change: func(f *fakeHost) {
				f.files["/etc/os-release"] = "ID=alpine\n"
				f.fail["/usr/sbin/iptables --version"] = true
				delete(f.cmds, "iptables-restore")
			},
			want: map[string]want{
				"iptables":                        {Warning, "`iptables --version` failed", "apk fix iptables"},
				"iptables-restore, iptables-save": {Missing, "not on PATH: iptables-restore", "apk add iptables"},
			},
		},
		{
			name:   "an unknown distribution gets Debian's commands, and is told so",
			change: func(f *fakeHost) { f.files["/etc/os-release"] = "ID=gentoo\n"; delete(f.cmds, "iptables") },
			want: map[string]want{"iptables": {Missing, "not found on PATH",
				"apt-get install iptables (Debian's command: this host runs gentoo, use its package manager)"}},
		},
		{
			name: "Raspberry Pi OS (64-bit says Debian): the memory cgroup is off at boot",
			change: func(f *fakeHost) {
				f.files["/etc/os-release"] = "ID=debian\n"
				f.files["/proc/device-tree/model"] = "Raspberry Pi 4 Model B Rev 1.4\x00"
				f.files["/sys/fs/cgroup/cgroup.controllers"] = "cpuset cpu io pids\n"
			},
			want: map[string]want{"cgroup controller memory": {Missing, "not in /sys/fs/cgroup/cgroup.controllers",
				"add cgroup_memory=1 cgroup_enable=memory to the one line of /boot/firmware/cmdline.txt"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := goodHost()
			if tt.change != nil {
				tt.change(h)
			}
			opts := tt.opts
			if reflect.ValueOf(opts.Runtime).IsZero() {
				opts.Runtime = carriedRuntime()
			}
			rs := Run(h, opts)
			seen := map[string]bool{}
			for _, r := range rs {
				if seen[r.Name] {
					t.Errorf("two results named %q", r.Name)
				}
				seen[r.Name] = true
				w, ok := tt.want[r.Name]
				if !ok {
					w = want{status: OK}
				}
				if r.Status != w.status || !strings.Contains(r.Found, w.found) || !strings.Contains(r.Fix, w.fix) {
					t.Errorf("%s: got %s, found %q, fix %q; want %s, found containing %q, fix containing %q",
						r.Name, r.Status, r.Found, r.Fix, w.status, w.found, w.fix)
				}
				if r.Status != OK && r.Fix == "" {
					t.Errorf("%s is %s but says no fix", r.Name, r.Status)
				}
			}
			for name := range tt.want {
				if !seen[name] {
					t.Errorf("no result named %q", name)
				}
			}
			wantFailed := false
			for _, w := range tt.want {
				wantFailed = wantFailed || w.status == Missing
			}
			if got := Failed(rs); got != wantFailed {
				t.Errorf("Failed = %v, want %v", got, wantFailed)
			}
		})
	}
}

func TestGoodHostReportsEveryCheck(t *testing.T) {
	rs := Run(goodHost(), Options{Runtime: carriedRuntime()})
	names := map[string]bool{}
	for _, r := range rs {
		names[r.Name] = true
	}
	for _, n := range []string{"cgroups", "cgroup controller cpu", "cgroup controller memory", "cgroup controller pids",
		"cgroup controller cpuset", "cgroup controller io", "kernel config", "CONFIG_NAMESPACES", "CONFIG_OVERLAY_FS",
		"overlayfs", "br_netfilter", "net.ipv4.ip_forward", "swap", "iptables", "iptables-restore, iptables-save",
		"iptables backends", "node runtime"} {
		if !names[n] {
			t.Errorf("no %q check", n)
		}
	}
	if len(rs) != 6+1+len(kernelOptions)+4+3+1 {
		t.Errorf("%d results, want %d", len(rs), 6+1+len(kernelOptions)+4+3+1)
	}
}

func gzipped(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
