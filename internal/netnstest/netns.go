// Package netnstest runs a package's kernel tests (iptables, routes,
// conntrack) in a private network namespace, never in the host's, and
// reads the tables back. Only test code imports it.
package netnstest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"orch/internal/iptsync"
)

// The tests and benchmarks that touch the kernel's tables run in a private
// network namespace, never in the host's: when run as root, TestMain
// re-executes the test binary under `unshare --net` with netnsEnv set to
// the parent's namespace (net:[inode]), so
// every test of the package runs there; the kernel tests check that they
// really are in a namespace of their own before they touch anything.
const netnsEnv = "ORCH_NETNSTEST_NETNS"

// netnsSkip says why the kernel tests cannot run, or "" when they can.
var netnsSkip string

// Main is a package's TestMain: func TestMain(m *testing.M) { netnstest.Main(m) }.
func Main(m *testing.M) {
	switch {
	case os.Getenv(netnsEnv) != "":
		// The child: in its own network namespace (checked by Require).
	case os.Geteuid() != 0:
		netnsSkip = "not root: the iptables tests need root (they run in a private network namespace)"
	default:
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			netnsSkip = "unshare (util-linux) not found: cannot make a private network namespace"
			break
		}
		self, err := os.Executable()
		if err != nil {
			netnsSkip = "cannot find the test binary: " + err.Error()
			break
		}
		if out, err := exec.Command(unshare, "--net", "true").CombinedOutput(); err != nil {
			netnsSkip = fmt.Sprintf("unshare --net does not work here (%v: %s)", err, strings.TrimSpace(string(out)))
			fmt.Fprintln(os.Stderr, "tests: "+netnsSkip+"; the iptables tests will be skipped")
			break
		}
		cmd := exec.Command(unshare, append([]string{"--net", "--", self}, os.Args[1:]...)...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		host, err := os.Readlink("/proc/self/ns/net")
		if err != nil {
			netnsSkip = "cannot read /proc/self/ns/net: " + err.Error()
			break
		}
		cmd.Env = append(os.Environ(), netnsEnv+"="+host)
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "tests in a private network namespace: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Require skips tb unless it runs as root in a private network
// namespace with iptables installed.
func Require(tb testing.TB) {
	tb.Helper()
	if netnsSkip != "" {
		tb.Skip(netnsSkip)
	}
	for _, bin := range []string{"iptables", "iptables-restore", "iptables-save"} {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Skipf("%s not installed (Debian: apt-get install iptables)", bin)
		}
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if host := os.Getenv(netnsEnv); err != nil || host == "" || self == host {
		tb.Fatalf("refusing to touch iptables: not in a private network namespace (now %q, the parent's %q)", self, host)
	}
}

// Run runs a command and fails tb when it fails.
func Run(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// SaveChains parses `iptables-save -t table` into chain → rules.
func SaveChains(tb testing.TB, table string) map[string][]string {
	tb.Helper()
	return SaveChainsOf(tb, "iptables-save", table)
}

// SaveChainsOf parses `save -t table` (iptables-save or ip6tables-save)
// into chain → rules.
func SaveChainsOf(tb testing.TB, save, table string) map[string][]string {
	tb.Helper()
	out := Run(tb, save, "-t", table)
	chains := map[string][]string{}
	for _, n := range iptsync.ChainsInSave([]byte(out)) {
		chains[n] = nil
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "-A ") {
			n := strings.Fields(l)[1]
			chains[n] = append(chains[n], l)
		}
	}
	return chains
}

// FlushAll empties the namespace's nat and filter tables between tests.
func FlushAll(tb testing.TB) {
	tb.Helper()
	for _, t := range []string{"nat", "filter"} {
		Run(tb, "iptables", "-t", t, "-F")
		Run(tb, "iptables", "-t", t, "-X")
	}
}
