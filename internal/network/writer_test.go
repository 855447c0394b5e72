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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/envtest"
	"orch/internal/kubelet/containerd/containerdtest"
	"orch/internal/kubelet/cri"
)

var _ RuntimeConfigUpdater = (*cri.Runtime)(nil)
var _ RuntimeConfigUpdater = (*cri.Fake)(nil)

func createNode(t *testing.T, client kubernetes.Interface, name, podCIDR string) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: podCIDR}}
	if _, err := client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func updateCalls(f *cri.Fake) []string {
	var calls []string
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, "UpdateRuntimeConfig") {
			calls = append(calls, c)
		}
	}
	return calls
}

// TestCNIConfigWriter runs the writer against the real apiserver with a
// fake runtime: it waits for its own Node's podCIDR, ignores other Nodes,
// retries a failing runtime, puts back a removed file, keeps the file when
// the Node goes away and follows a new podCIDR.
func TestCNIConfigWriter(t *testing.T) {
	env := envtest.New(t)
	client := env.Client
	createNode(t, client, "n1", "")
	createNode(t, client, "n2", "10.42.9.0/24")

	rt := cri.NewFake()
	rt.FailNext("UpdateRuntimeConfig", errors.New("runtime busy"))
	dir := filepath.Join(t.TempDir(), "net.d")
	opts := BridgeOptions{MTU: 1400}
	logs := &logRecorder{Handler: containerdtest.Logger(t).Handler(), mu: &sync.Mutex{}, msgs: new([]string)}
	w := NewCNIConfigWriter(CNIConfig{NodeName: "n1", ConfDir: dir, Bridge: opts, Resync: time.Second},
		client, rt, slog.New(logs))
	if w.Path() != filepath.Join(dir, "10-orch.conflist") {
		t.Errorf("Path() = %q", w.Path())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v after its context ended", err)
		}
	}()

	wantFile := func(podCIDR string) func() (bool, error) {
		want, err := BridgeConfList([]string{podCIDR}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return func() (bool, error) {
			got, err := os.ReadFile(w.Path())
			if err != nil {
				return false, err
			}
			if !bytes.Equal(got, want) {
				return false, fmt.Errorf("%s holds\n%s", w.Path(), got)
			}
			return true, nil
		}
	}

	// n1 has no podCIDR yet: once the writer has seen it, nothing is
	// written (n2's is not ours).
	envtest.EventuallyTrue(t, "the writer to wait for n1's podCIDR", func() bool {
		return slices.Contains(logs.messages(), "waiting for the node's podCIDR (given by the server's node IPAM)")
	})
	if _, err := os.Stat(w.Path()); !os.IsNotExist(err) {
		t.Fatalf("conflist written before the node has a podCIDR: %v", err)
	}
	select {
	case <-w.Ready():
		t.Fatal("Ready before the node has a podCIDR")
	default:
	}

	node, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Spec.PodCIDR = "10.42.1.0/24"
	if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Ready():
	case <-time.After(envtest.EventuallyTimeout):
		t.Fatal("not Ready after the node got its podCIDR")
	}
	if ok, err := wantFile("10.42.1.0/24")(); !ok {
		t.Fatal(err)
	}
	if w.PodCIDR() != "10.42.1.0/24" {
		t.Errorf("PodCIDR() = %q", w.PodCIDR())
	}
	// The first call failed and was retried.
	if got, want := updateCalls(rt), []string{"UpdateRuntimeConfig 10.42.1.0/24", "UpdateRuntimeConfig 10.42.1.0/24"}; !slices.Equal(got, want) {
		t.Errorf("runtime calls %q, want %q", got, want)
	}
	st, err := rt.Status(ctx, false)
	if err != nil || !st.Status.Conditions[1].Status {
		t.Errorf("the runtime's network is not ready: %v, %v", st, err)
	}
	if info, err := os.Stat(w.Path()); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("conflist mode: %v, %v", info, err)
	}

	// A removed file is put back at the next resync; the runtime is not
	// told again.
	if err := os.Remove(w.Path()); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "the removed conflist is back", wantFile("10.42.1.0/24"))

	// The Node goes away: the file stays for the pods still running, so
	// when it comes back with the same podCIDR nothing is written again.
	// Then it comes back with another podCIDR: the file and the runtime
	// follow.
	for _, podCIDR := range []string{"10.42.1.0/24", "10.42.2.0/24"} {
		if err := client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		createNode(t, client, "n1", podCIDR)
	}
	envtest.Eventually(t, "the conflist on the new podCIDR", wantFile("10.42.2.0/24"))
	wrote := "wrote the pod network's CNI config"
	if got, want := slices.DeleteFunc(logs.messages(), func(m string) bool { return !strings.HasPrefix(m, wrote) }),
		[]string{wrote + " 10.42.1.0/24", wrote + " 10.42.1.0/24", wrote + " 10.42.2.0/24"}; !slices.Equal(got, want) {
		t.Errorf("writes %q, want %q (the first, the removed file put back, the new podCIDR)", got, want)
	}
	envtest.Eventually(t, "the runtime told the new podCIDR", func() (bool, error) {
		return w.PodCIDR() == "10.42.2.0/24", nil
	})
	if got, want := updateCalls(rt), []string{"UpdateRuntimeConfig 10.42.1.0/24", "UpdateRuntimeConfig 10.42.1.0/24", "UpdateRuntimeConfig 10.42.2.0/24"}; !slices.Equal(got, want) {
		t.Errorf("runtime calls %q, want %q", got, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "10-orch.conflist" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("conf dir holds %q, want only 10-orch.conflist", names)
	}
}

func TestCNIConfigWriterRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  CNIConfig
		want string
	}{
		{CNIConfig{ConfDir: "/x"}, "needs a node name"},
		{CNIConfig{NodeName: "n1"}, "needs a node name and a CNI conf dir"},
		{CNIConfig{NodeName: "n1", ConfDir: "/x", Bridge: BridgeOptions{Bridge: "much-too-long-a-name"}}, "not a valid interface name"},
	} {
		err := NewCNIConfigWriter(tc.cfg, nil, cri.NewFake(), nil).Start(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start with %+v: %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
}

func TestPodCIDRString(t *testing.T) {
	for _, tc := range []struct {
		spec   corev1.NodeSpec
		v4, v6 string
	}{
		{corev1.NodeSpec{}, "", ""},
		{corev1.NodeSpec{PodCIDR: "10.42.1.0/24"}, "10.42.1.0/24", ""},
		{corev1.NodeSpec{PodCIDR: "10.42.1.0/24", PodCIDRs: []string{"10.42.1.0/24"}}, "10.42.1.0/24", ""},
		{corev1.NodeSpec{PodCIDR: "fd00::/64", PodCIDRs: []string{"fd00::/64", "10.42.1.0/24"}}, "10.42.1.0/24", "fd00::/64"},
		{corev1.NodeSpec{PodCIDR: "fd00::/64", PodCIDRs: []string{"fd00::/64"}}, "", "fd00::/64"},
	} {
		n := &corev1.Node{Spec: tc.spec}
		if v4, v6 := podCIDRString(n, true), podCIDRString(n, false); v4 != tc.v4 || v6 != tc.v6 {
			t.Errorf("podCIDRString(%+v) = %q, %q; want %q, %q", tc.spec, v4, v6, tc.v4, tc.v6)
		}
	}
}

func TestWriteIfChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "10-orch.conflist")
	for i, tc := range []struct {
		data  string
		wrote bool
	}{{"a\n", true}, {"a\n", false}, {"b\n", true}} {
		wrote, err := writeIfChanged(path, []byte(tc.data))
		if err != nil || wrote != tc.wrote {
			t.Fatalf("write %d: %v, %v; want wrote %v", i, wrote, err, tc.wrote)
		}
		if got, _ := os.ReadFile(path); string(got) != tc.data {
			t.Fatalf("write %d: file holds %q", i, got)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// logRecorder is a slog.Handler that also keeps each message, followed by
// its podCIDRs when it has them, for the test to see what the writer did.
type logRecorder struct {
	slog.Handler
	mu   *sync.Mutex
	msgs *[]string
}

func (r *logRecorder) Handle(ctx context.Context, rec slog.Record) error {
	m := rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "podCIDRs" {
			m += " " + strings.Trim(a.Value.String(), "[]")
		}
		return true
	})
	r.mu.Lock()
	*r.msgs = append(*r.msgs, m)
	r.mu.Unlock()
	return r.Handler.Handle(ctx, rec)
}

func (r *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logRecorder{Handler: r.Handler.WithAttrs(attrs), mu: r.mu, msgs: r.msgs}
}

func (r *logRecorder) WithGroup(name string) slog.Handler {
	return &logRecorder{Handler: r.Handler.WithGroup(name), mu: r.mu, msgs: r.msgs}
}

// messages returns a copy of what was logged so far.
func (r *logRecorder) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(*r.msgs)
}
