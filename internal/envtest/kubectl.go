package envtest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// exit is what kubectl's fatal handler panics with, to be recovered as an
// error instead of ending the test binary.
type exit struct {
	msg  string
	code int
}

// Kubectl runs the real kubectl (as `orch kubectl` does) in process with
// args against the apiserver at config.Host (in the namespace "default") and
// returns what it printed; it logs the output.
func Kubectl(t testing.TB, config *rest.Config, args ...string) (string, error) {
	t.Helper()
	// One writer for stdout and stderr, safe for the two goroutines that
	// copy exec's streams into it at once (a bare bytes.Buffer loses
	// output when both ReadFrom into it together).
	out := &SyncBuffer{}
	cmd := kubectlcmd.NewKubectlCommand(kubectlcmd.KubectlOptions{
		Arguments:   append([]string{"kubectl"}, args...),
		ConfigFlags: configFlags(t, config),
		IOStreams:   genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: out},
	})
	cmd.SetArgs(args)
	err := execute(cmd.Execute)
	t.Logf("kubectl %s\n%s", strings.Join(args, " "), out.String())
	return out.String(), err
}

// SyncBuffer is a bytes.Buffer with a lock (and no ReadFrom), safe for a
// process's or a goroutine's output while the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// KubectlContains runs kubectl with args and fails the test unless it
// succeeds and prints want; it returns what kubectl printed.
func KubectlContains(t testing.TB, config *rest.Config, want string, args ...string) string {
	t.Helper()
	out, err := Kubectl(t, config, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if !strings.Contains(out, want) {
		t.Fatalf("kubectl %s printed %q, want it to contain %q", strings.Join(args, " "), out, want)
	}
	return out
}

// configFlags writes a kubeconfig for config into a temporary directory and
// returns kubectl's flags pointing at it.
func configFlags(t testing.TB, config *rest.Config) *genericclioptions.ConfigFlags {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["orch"] = &clientcmdapi.Cluster{Server: config.Host}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["orch"] = &clientcmdapi.Context{Cluster: "orch", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "orch"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(dir, "cache")
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig, flags.CacheDir = &kubeconfig, &cacheDir
	return flags
}

// fatalHandler turns kubectl's fatal handler into a panic, once for the
// test binary: it is a global that goroutines kubectl leaves behind (cp's
// tar pipe) still read after a command returned, so it is never restored.
var fatalHandler sync.Once

// execute runs run with kubectl's fatal handler turned into an error.
func execute(run func() error) (err error) {
	fatalHandler.Do(func() {
		cmdutil.BehaviorOnFatal(func(msg string, code int) { panic(exit{msg, code}) })
	})
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(exit)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("exit %d: %s", f.code, f.msg)
		}
	}()
	return run()
}
