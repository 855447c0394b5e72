package daemonset

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/utils/clock"

	"orch/internal/simnode"
)

type kubectlExit struct {
	msg  string
	code int
}

// kubectl runs the real kubectl (as `orch kubectl` does) against the test
// apiserver and returns what it printed.
func (c *cluster) kubectl(args ...string) (string, error) {
	c.t.Helper()
	dir := c.t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["orch"] = &clientcmdapi.Cluster{Server: c.config.Host}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["orch"] = &clientcmdapi.Context{Cluster: "orch", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "orch"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		c.t.Fatal(err)
	}
	cacheDir := filepath.Join(dir, "cache")
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig, flags.CacheDir = &kubeconfig, &cacheDir
	var out bytes.Buffer
	cmd := kubectlcmd.NewKubectlCommand(kubectlcmd.KubectlOptions{
		Arguments:   append([]string{"kubectl"}, args...),
		ConfigFlags: flags,
		IOStreams:   genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out},
	})
	cmd.SetArgs(args)
	cmdutil.BehaviorOnFatal(func(msg string, code int) { panic(kubectlExit{msg, code}) })
	defer cmdutil.DefaultBehaviorOnFatal()
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				f, ok := r.(kubectlExit)
				if !ok {
					panic(r)
				}
				err = fmt.Errorf("exit %d: %s", f.code, f.msg)
			}
		}()
		err = cmd.Execute()
	}()
	c.t.Logf("kubectl %s\n%s", strings.Join(args, " "), out.String())
	return out.String(), err
}

func (c *cluster) mustKubectl(want string, args ...string) string {
	c.t.Helper()
	out, err := c.kubectl(args...)
	if err != nil {
		c.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if !strings.Contains(out, want) {
		c.t.Fatalf("kubectl %s printed %q, want it to contain %q", strings.Join(args, " "), out, want)
	}
	return out
}

// kubectl rollout status, history and undo work on the revisions and
// status the controller writes; revisionHistoryLimit trims old revisions.
func TestKubectlRollout(t *testing.T) {
	c := startCluster(t, clock.RealClock{}, simnode.Node{Name: "n1"}, simnode.Node{Name: "n2"})
	one := int32(1)
	ds := c.createDS(newDS("web", func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = &one }))
	c.mustKubectl(`daemon set "web" successfully rolled out`, "rollout", "status", "ds/web", "--timeout=90s")
	c.mustKubectl("web    2         2         2       2            2", "get", "ds", "web")

	c.updateDS("web", func(ds *appsv1.DaemonSet) {
		ds.Annotations = map[string]string{"kubernetes.io/change-cause": "to v2"}
		ds.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	})
	c.mustKubectl(`daemon set "web" successfully rolled out`, "rollout", "status", "ds/web", "--timeout=90s")
	out := c.mustKubectl("to v2", "rollout", "history", "ds/web")
	if !strings.Contains(out, "1         <none>") || !strings.Contains(out, "2         to v2") {
		t.Fatalf("history:\n%s", out)
	}
	c.mustKubectl("busybox:1", "rollout", "history", "ds/web", "--revision=1")

	c.mustKubectl("daemonset.apps/web rolled back", "rollout", "undo", "ds/web")
	eventually(t, "busybox:1 again, as revision 3", func() bool {
		revs := c.revisions(ds)
		if len(revs) != 2 || revs[0].Revision != 2 || revs[1].Revision != 3 {
			return false
		}
		for _, p := range c.pods("web") {
			if p.Spec.Containers[0].Image != "busybox:1" || p.Labels[hashLabel] != revs[1].Labels[hashLabel] {
				return false
			}
		}
		return c.runsOn("web", "n1", "n2") && statusIs(c.ds("web"), 2, 2, 0, 2, 2, 2)
	})
	c.mustKubectl("current template already matches revision 3", "rollout", "undo", "ds/web", "--to-revision=3")
	c.mustKubectl(`daemon set "web" successfully rolled out`, "rollout", "status", "ds/web", "--timeout=90s")

	// A third template: revision 2 is beyond the limit of one old revision.
	c.updateDS("web", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "busybox:3" })
	eventually(t, "revisions 3 and 4 kept", func() bool {
		revs := c.revisions(ds)
		return len(revs) == 2 && revs[0].Revision == 3 && revs[1].Revision == 4
	})
	c.mustKubectl(`daemon set "web" successfully rolled out`, "rollout", "status", "ds/web", "--timeout=90s")
}
