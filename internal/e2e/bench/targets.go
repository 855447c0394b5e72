package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// readyTimeout bounds every wait for /readyz.
const readyTimeout = 90 * time.Second

// target is one running API server under test: its processes, an admin
// client configuration and the directory of its client CA (ca.crt, ca.key).
type target struct {
	name   string
	procs  []*proc
	config *rest.Config
	caDir  string
}

func (t *target) stop() {
	// Stop in reverse start order (kube-apiserver before its etcd).
	for i := len(t.procs) - 1; i >= 0; i-- {
		t.procs[i].stop(10 * time.Second)
	}
}

// kind says how to start one kind of server in dir: afresh when dir is
// empty, or again on the state an earlier start left there. start returns the
// running target and the time from the first process start to /readyz ok.
type kind struct {
	name  string
	start func(dir string) (*target, time.Duration, error)
}

// orchKind runs bin as `orch server` with its data, kubeconfig and an empty
// config file (so /etc/orch/config.yaml never leaks in) under dir.
func orchKind(bin string) kind { return orchKindWith(bin, "") }

// orchKindWith is orchKind with config (YAML) in the config file.
func orchKindWith(bin, config string) kind {
	start := func(dir string) (*target, time.Duration, error) {
		ports, err := dirPorts(dir)
		if err != nil {
			return nil, 0, err
		}
		cfgFile, kubeconfig := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "kubeconfig.yaml")
		if err := os.WriteFile(cfgFile, []byte(config), 0o600); err != nil {
			return nil, 0, err
		}
		t0 := time.Now()
		p, err := startProc("orch", filepath.Join(dir, fmt.Sprintf("orch-%d.log", t0.UnixNano())), bin, "server",
			"--config", cfgFile, "--data-dir", filepath.Join(dir, "data"), "--write-kubeconfig", kubeconfig,
			"--bind-address", "127.0.0.1", "--https-listen-port", strconv.Itoa(ports[0]),
			"--etcd-client-port", strconv.Itoa(ports[1]), "--etcd-peer-port", strconv.Itoa(ports[2]))
		if err != nil {
			return nil, 0, err
		}
		took, err := waitReadyz("https://127.0.0.1:"+strconv.Itoa(ports[0]), t0, readyTimeout, p)
		if err != nil {
			p.stop(5 * time.Second)
			return nil, 0, err
		}
		config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			p.stop(5 * time.Second)
			return nil, 0, fmt.Errorf("load the admin kubeconfig %s: %w", kubeconfig, err)
		}
		// data-dir/server/tls is where orch keeps its cluster CA.
		caDir := filepath.Join(dir, "data", "server", "tls")
		return &target{name: "orch", procs: []*proc{p}, config: config, caDir: caDir}, took, nil
	}
	return kind{name: "orch", start: start}
}

// dirPorts returns the three ports (https, etcd client, etcd peer) of the
// server in dir: free ones on the first start, the same ones on a restart.
func dirPorts(dir string) ([]int, error) {
	file := filepath.Join(dir, "ports")
	if data, err := os.ReadFile(file); err == nil {
		var p [3]int
		if _, err := fmt.Sscan(string(data), &p[0], &p[1], &p[2]); err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		return p[:], nil
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	return ports, os.WriteFile(file, []byte(fmt.Sprintln(ports[0], ports[1], ports[2])), 0o600)
}

// peerKind runs upstream etcd and kube-apiserver side by side, the etcd
// configured like orch's embedded one (same quota, request size and snapshot
// count; fsync on). Both start at once (kube-apiserver retries etcd until it
// answers). The PKI is made before the clock starts; orch makes its own inside
// its time.
func peerKind(apiserverBin, etcdBin string) kind {
	start := func(dir string) (*target, time.Duration, error) {
		ports, err := dirPorts(dir)
		if err != nil {
			return nil, 0, err
		}
		pki, err := ensurePeerPKI(filepath.Join(dir, "pki"))
		if err != nil {
			return nil, 0, err
		}
		etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
		peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[2])
		t0 := time.Now()
		etcd, err := startProc("etcd", filepath.Join(dir, fmt.Sprintf("etcd-%d.log", t0.UnixNano())), etcdBin,
			"--name", "default", "--data-dir", filepath.Join(dir, "etcd"),
			"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
			"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", "default="+peerURL, "--log-level", "error",
			"--quota-backend-bytes", "2147483648", "--max-request-bytes", "2097152", "--snapshot-count", "10000")
		if err != nil {
			return nil, 0, err
		}
		kas, err := startProc("kube-apiserver", filepath.Join(dir, fmt.Sprintf("kube-apiserver-%d.log", t0.UnixNano())), apiserverBin,
			"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
			"--secure-port", strconv.Itoa(ports[0]), "--cert-dir", filepath.Join(dir, "certs"),
			"--tls-cert-file", pki.path("serving.crt"), "--tls-private-key-file", pki.path("serving.key"),
			"--client-ca-file", pki.path("ca.crt"), "--authorization-mode", "Node,RBAC",
			"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file", pki.path("sa.pub"), "--service-account-signing-key-file", pki.path("sa.key"),
			"--service-cluster-ip-range", "10.43.0.0/16", "--profiling=false",
			// A loopback advertise address needs the endpoint reconciler off.
			"--endpoint-reconciler-type", "none")
		if err != nil {
			etcd.stop(5 * time.Second)
			return nil, 0, err
		}
		t := &target{name: "kube-apiserver+etcd", procs: []*proc{etcd, kas}, caDir: pki.dir}
		took, err := waitReadyz("https://127.0.0.1:"+strconv.Itoa(ports[0]), t0, readyTimeout, etcd, kas)
		if err != nil {
			t.stop()
			return nil, 0, err
		}
		t.config = &rest.Config{
			Host:            "https://127.0.0.1:" + strconv.Itoa(ports[0]),
			TLSClientConfig: rest.TLSClientConfig{CAData: pki.caPEM, CertData: pki.adminCert, KeyData: pki.adminKey},
		}
		return t, took, nil
	}
	return kind{name: "kube-apiserver+etcd", start: start}
}
