package daemonset

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"orch/internal/envtest"
	"orch/internal/simnode"
)

func ssd(name string, taints ...corev1.Taint) simnode.Node {
	return simnode.Node{Name: name, Labels: map[string]string{"disk": "ssd"}, Taints: taints}
}

// One pod per node the DaemonSet's nodeSelector and the nodes' taints
// allow, following nodes as they are added, relabelled, tainted and
// deleted; the pods are bound by the scheduler and become ready.
func TestOnePodPerEligibleNode(t *testing.T) {
	c := startCluster(t, clock.RealClock{},
		ssd("n1"), ssd("n2", corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}),
		simnode.Node{Name: "n3", Labels: map[string]string{"disk": "hdd"}}, ssd("n4"))
	ds := c.createDS(newDS("agent", func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	}))
	envtest.EventuallyTrue(t, "pods on n1 and n4", func() bool {
		return c.runsOn("agent", "n1", "n4") && statusIs(c.ds("agent"), 2, 2, 0, 2, 2, 2)
	})

	revs := c.revisions(ds)
	if len(revs) != 1 || revs[0].Revision != 1 || revs[0].Name != "agent-"+revs[0].Labels[hashLabel] {
		t.Fatalf("revisions: %+v", revs)
	}
	for _, pod := range c.pods("agent") {
		checkDaemonPod(t, &pod, ds, revs[0].Labels[hashLabel], "1")
	}

	c.updateNode("n3", func(n *corev1.Node) { n.Labels["disk"] = "ssd" })
	envtest.EventuallyTrue(t, "a pod on relabelled n3", func() bool { return c.runsOn("agent", "n1", "n3", "n4") })

	c.addNode(ssd("n5"))
	envtest.EventuallyTrue(t, "a pod on new n5", func() bool { return c.runsOn("agent", "n1", "n3", "n4", "n5") })

	c.updateNode("n1", func(n *corev1.Node) { n.Labels["disk"] = "hdd" })
	envtest.EventuallyTrue(t, "n1's pod gone", func() bool {
		return c.runsOn("agent", "n3", "n4", "n5") && statusIs(c.ds("agent"), 3, 3, 0, 3, 3, 3)
	})

	c.updateNode("n4", func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "evict", Value: "now", Effect: corev1.TaintEffectNoExecute})
	})
	envtest.EventuallyTrue(t, "n4's pod evicted by a NoExecute taint", func() bool { return c.runsOn("agent", "n3", "n5") })

	// A NoSchedule taint keeps new pods away but lets the running one stay.
	c.updateNode("n3", func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule})
	})
	envtest.EventuallyTrue(t, "n3's pod counted misscheduled", func() bool { return statusIs(c.ds("agent"), 1, 1, 1, 1, 1, 1) })
	if !c.runsOn("agent", "n3", "n5") {
		t.Fatalf("pods after a NoSchedule taint: %v", podNodes(c.pods("agent")))
	}

	if err := c.client.CoreV1().Nodes().Delete(bg, "n5", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "n5 no longer desired", func() bool { return statusIs(c.ds("agent"), 0, 0, 1, 0, 0, 0) })

	envtest.EventuallyTrue(t, "events", func() bool {
		ev := c.events("agent")
		return envtest.CountPrefix(ev, "Normal SuccessfulCreate Created pod: agent-") == 4 &&
			envtest.CountPrefix(ev, "Normal SuccessfulDelete Deleted pod: agent-") == 2
	})
}

// checkDaemonPod checks what upstream puts on a daemon pod.
func checkDaemonPod(t *testing.T, pod *corev1.Pod, ds *appsv1.DaemonSet, hash, generation string) {
	t.Helper()
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "DaemonSet" || ref.APIVersion != "apps/v1" || ref.UID != ds.UID || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Fatalf("pod %s: ownerReferences %+v", pod.Name, pod.OwnerReferences)
	}
	if !strings.HasPrefix(pod.Name, ds.Name+"-") || pod.Labels[hashLabel] != hash || pod.Labels[templateGenerationLabel] != generation {
		t.Fatalf("pod %s: labels %v, want %s=%s and %s=%s", pod.Name, pod.Labels, hashLabel, hash, templateGenerationLabel, generation)
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchFields) != 1 || terms[0].MatchFields[0].Key != "metadata.name" ||
		len(terms[0].MatchFields[0].Values) != 1 || terms[0].MatchFields[0].Values[0] != pod.Spec.NodeName {
		t.Fatalf("pod %s on %s: node affinity %+v", pod.Name, pod.Spec.NodeName, terms)
	}
	has := map[string]bool{}
	for _, tol := range pod.Spec.Tolerations {
		if tol.Operator == corev1.TolerationOpExists && tol.TolerationSeconds == nil {
			has[tol.Key+":"+string(tol.Effect)] = true
		}
	}
	for _, want := range []string{"node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/unreachable:NoExecute",
		"node.kubernetes.io/disk-pressure:NoSchedule", "node.kubernetes.io/memory-pressure:NoSchedule",
		"node.kubernetes.io/pid-pressure:NoSchedule", "node.kubernetes.io/unschedulable:NoSchedule"} {
		if !has[want] {
			t.Fatalf("pod %s lacks the toleration %s: %+v", pod.Name, want, pod.Spec.Tolerations)
		}
	}
}

func podNodes(pods []corev1.Pod) []string {
	n, _ := nodesOf(pods)
	return n
}

// Taints keep pods away unless tolerated; PreferNoSchedule and a cordoned
// node do not.
func TestTaintsAndTolerations(t *testing.T) {
	c := startCluster(t, clock.RealClock{},
		simnode.Node{Name: "plain"},
		simnode.Node{Name: "gpu", Taints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
		simnode.Node{Name: "db", Taints: []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}}},
		simnode.Node{Name: "prefer", Taints: []corev1.Taint{{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}}},
		simnode.Node{Name: "cordoned"})
	c.updateNode("cordoned", func(n *corev1.Node) {
		n.Spec.Unschedulable = true
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	})
	c.createDS(newDS("logs", func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	}))
	envtest.EventuallyTrue(t, "pods everywhere but db", func() bool {
		return c.runsOn("logs", "plain", "gpu", "prefer", "cordoned") && statusIs(c.ds("logs"), 4, 4, 0, 4, 4, 4)
	})

	// Tolerating db's taint too (a template change: a rolling update) adds db.
	c.updateDS("logs", func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Tolerations = append(ds.Spec.Template.Spec.Tolerations,
			corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	})
	envtest.EventuallyTrue(t, "a pod on db too", func() bool {
		return c.runsOn("logs", "plain", "gpu", "db", "prefer", "cordoned") && statusIs(c.ds("logs"), 5, 5, 0, 5, 5, 5)
	})
}

// A pod the scheduler cannot bind stays pending for its node and is
// deleted with the node; a failed pod is deleted and replaced; OnDelete
// waits for the user to delete pods before they get the new template.
func TestPendingFailedAndOnDelete(t *testing.T) {
	c := startCluster(t, clock.RealClock{}, simnode.Node{Name: "big"}, simnode.Node{Name: "tiny", CPU: "100m"})
	ds := c.createDS(newDS("mon", func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
		ds.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
	}))
	envtest.EventuallyTrue(t, "a running pod on big, a pending one for tiny", func() bool {
		pods := c.pods("mon")
		return len(pods) == 2 && statusIs(c.ds("mon"), 2, 2, 0, 1, 2, 1)
	})
	var pending string
	for _, p := range c.pods("mon") {
		if p.Spec.NodeName == "" {
			pending = p.Name
			if n, err := targetNode(&p); err != nil || n != "tiny" {
				t.Fatalf("pending pod is for %q (%v), want tiny", n, err)
			}
		}
	}
	if pending == "" {
		t.Fatalf("no pending pod: %v", podNodes(c.pods("mon")))
	}
	if err := c.client.CoreV1().Nodes().Delete(bg, "tiny", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the pending pod deleted with its node", func() bool {
		return c.runsOn("mon", "big") && statusIs(c.ds("mon"), 1, 1, 0, 1, 1, 1)
	})

	// The pod on big fails: it is deleted and replaced.
	failed := c.pods("mon")[0]
	failed.Annotations = map[string]string{simnode.FinishAnnotation: "Failed"}
	if _, err := c.client.CoreV1().Pods("default").Update(bg, &failed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "a replacement of the failed pod", func() bool {
		pods := c.pods("mon")
		return c.runsOn("mon", "big") && pods[0].Name != failed.Name
	})
	envtest.EventuallyTrue(t, "a FailedDaemonPod event", func() bool {
		return envtest.CountPrefix(c.events("mon"), "Warning FailedDaemonPod Found failed daemon pod default/"+failed.Name+" on node big, will try to kill it") == 1
	})

	// OnDelete: a new template changes nothing until the pod is deleted.
	c.updateDS("mon", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "busybox:2" })
	envtest.EventuallyTrue(t, "the new generation observed, the pod not updated", func() bool {
		return statusIs(c.ds("mon"), 1, 1, 0, 1, 0, 1) && len(c.revisions(ds)) == 2
	})
	old := c.pods("mon")[0]
	if old.Spec.Containers[0].Image != "busybox:1" {
		t.Fatalf("OnDelete replaced the pod: %s", old.Spec.Containers[0].Image)
	}
	if err := c.client.CoreV1().Pods("default").Delete(bg, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the replacement has the new template", func() bool {
		pods := c.pods("mon")
		return c.runsOn("mon", "big") && pods[0].Spec.Containers[0].Image == "busybox:2" &&
			pods[0].Labels[templateGenerationLabel] == "2" && statusIs(c.ds("mon"), 1, 1, 0, 1, 1, 1)
	})
}

// A revision name already taken by other data (a hash collision) moves
// status.collisionCount on and the revision gets the next name, which its
// label and its pods' labels follow.
func TestHashCollision(t *testing.T) {
	c := startCluster(t, clock.RealClock{}, simnode.Node{Name: "n1"})
	if _, err := c.client.CoreV1().Namespaces().Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The same DaemonSet in another namespace tells the name its revision gets.
	probe := newDS("x", nil)
	probe.Namespace = "probe"
	if _, err := c.client.AppsV1().DaemonSets("probe").Create(bg, probe, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var taken string
	envtest.EventuallyTrue(t, "the probe's revision", func() bool {
		list, err := c.client.AppsV1().ControllerRevisions("probe").List(bg, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false
		}
		taken = list.Items[0].Name
		return true
	})
	squatter := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: taken, Namespace: "default", Labels: map[string]string{"app": "someone-else"}},
		Data:       runtime.RawExtension{Raw: []byte(`{"other":"data"}`)},
		Revision:   1,
	}
	if _, err := c.client.AppsV1().ControllerRevisions("default").Create(bg, squatter, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ds := c.createDS(newDS("x", nil))
	envtest.EventuallyTrue(t, "a pod, and collisionCount 1", func() bool {
		got := c.ds("x")
		return c.runsOn("x", "n1") && got.Status.CollisionCount != nil && *got.Status.CollisionCount == 1 && statusIs(got, 1, 1, 0, 1, 1, 1)
	})
	revs := c.revisions(ds)
	if len(revs) != 1 || revs[0].Name == taken || revs[0].Name != "x-"+revs[0].Labels[hashLabel] {
		t.Fatalf("revisions %+v (name %s was taken)", revs, taken)
	}
	if pod := c.pods("x")[0]; pod.Labels[hashLabel] != revs[0].Labels[hashLabel] {
		t.Fatalf("pod labelled %s, revision %s", pod.Labels[hashLabel], revs[0].Labels[hashLabel])
	}
}
