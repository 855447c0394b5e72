package scheduler_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/envtest"
	st "orch/internal/scheduler/schedtest"
	"orch/internal/simnode"
)

const (
	controlPlane = "node-role.kubernetes.io/control-plane"
	zone         = v1.LabelTopologyZone
)

func TestSpreadsPodsOverNodes(t *testing.T) {
	c := newCluster(t, simnode.Node{Name: "n1"}, simnode.Node{Name: "n2"}, simnode.Node{Name: "n3"})
	for i := range 6 {
		c.create(st.Pod(fmt.Sprintf("web-%d", i)).Req("cpu", "500m", "memory", "256Mi").Obj())
	}
	counts := map[string]int{}
	for i := range 6 {
		name := fmt.Sprintf("web-%d", i)
		node := c.nodeOf(name)
		counts[node]++
		if typ, msg := c.event(name, "Scheduled"); typ != v1.EventTypeNormal || msg != "Successfully assigned default/"+name+" to "+node {
			t.Errorf("Scheduled event: %s %q", typ, msg)
		}
		if cond := c.get(name).Status.Conditions; len(cond) == 0 {
			t.Errorf("%s has no conditions after binding", name)
		}
	}
	if counts["n1"] != 2 || counts["n2"] != 2 || counts["n3"] != 2 {
		t.Errorf("placement %v, want 2 pods on each node", counts)
	}
}

func TestPodThatFitsNowhereWaitsForANode(t *testing.T) {
	cp := []v1.Taint{{Key: controlPlane, Effect: v1.TaintEffectNoSchedule}}
	c := newCluster(t, simnode.Node{Name: "w1", CPU: "2"}, simnode.Node{Name: "cp1", Taints: cp}, simnode.Node{Name: "cp2", Taints: cp})
	c.create(st.Pod("big").Req("cpu", "3").Obj())
	c.expectMessage("big", "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }. "+
		"preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
	if p := c.get("big"); p.Spec.NodeName != "" || p.Status.Phase != v1.PodPending {
		t.Fatalf("big: node %q phase %s", p.Spec.NodeName, p.Status.Phase)
	}
	c.addNode(c.ctx, simnode.Node{Name: "w2", CPU: "4"})
	if node := c.nodeOf("big"); node != "w2" {
		t.Errorf("big went to %s, want the new node w2", node)
	}
}

func TestTaintsTolerationsAndNodeSelector(t *testing.T) {
	c := newCluster(t,
		simnode.Node{Name: "gpu", Labels: map[string]string{"accel": "gpu"}, Taints: []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}}},
		simnode.Node{Name: "hdd", Labels: map[string]string{"disk": "hdd"}},
		simnode.Node{Name: "ssd", Labels: map[string]string{"disk": "ssd"}})
	for i := range 4 {
		c.create(st.Pod(fmt.Sprintf("plain-%d", i)).Req("cpu", "100m").Obj())
	}
	c.create(st.Pod("trainer").NodeSelector("accel", "gpu").Toleration("dedicated", v1.TolerationOpEqual, "gpu", v1.TaintEffectNoSchedule).Obj())
	c.create(st.Pod("db").NodeSelector("disk", "ssd").Obj())
	c.create(st.Pod("untolerated").NodeSelector("accel", "gpu").Obj())
	c.create(st.Pod("nvme").NodeSelector("disk", "nvme").Obj())
	for i := range 4 {
		if node := c.nodeOf(fmt.Sprintf("plain-%d", i)); node == "gpu" {
			t.Errorf("plain-%d landed on the tainted node", i)
		}
	}
	if node := c.nodeOf("trainer"); node != "gpu" {
		t.Errorf("trainer on %s, want gpu", node)
	}
	if node := c.nodeOf("db"); node != "ssd" {
		t.Errorf("db on %s, want ssd", node)
	}
	c.expectMessage("untolerated", "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match Pod's node affinity/selector. "+
		"preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
	c.expectMessage("nvme", "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match Pod's node affinity/selector. "+
		"preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
}

func TestRequiredAntiAffinity(t *testing.T) {
	c := newCluster(t, simnode.Node{Name: "n1"}, simnode.Node{Name: "n2"}, simnode.Node{Name: "n3"})
	anti := &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{
		st.Term(v1.LabelHostname, "app", "cache")}}}
	for i := range 4 {
		c.create(st.Pod(fmt.Sprintf("cache-%d", i)).Label("app", "cache").Affinity(anti).Obj())
		if i < 3 {
			c.nodeOf(fmt.Sprintf("cache-%d", i)) // one at a time, so the fourth is the odd one out
		}
	}
	seen := map[string]bool{}
	for i := range 3 {
		seen[c.nodeOf(fmt.Sprintf("cache-%d", i))] = true
	}
	if len(seen) != 3 {
		t.Errorf("three cache pods share nodes: %v", seen)
	}
	c.expectMessage("cache-3", "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "+
		"preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.")
}

func TestTopologySpread(t *testing.T) {
	c := newCluster(t,
		simnode.Node{Name: "a1", Labels: map[string]string{zone: "a"}}, simnode.Node{Name: "a2", Labels: map[string]string{zone: "a"}},
		simnode.Node{Name: "b1", Labels: map[string]string{zone: "b"}})
	counts := map[string]int{}
	for i := range 6 {
		name := fmt.Sprintf("api-%d", i)
		c.create(st.Pod(name).Label("app", "api").Spread(1, zone, v1.DoNotSchedule, "app", "api").Obj())
		n, err := c.client.CoreV1().Nodes().Get(c.ctx, c.nodeOf(name), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		counts[n.Labels[zone]]++
		if d := counts["a"] - counts["b"]; d > 1 || d < -1 {
			t.Fatalf("after %d pods zones hold %v: skew over 1", i+1, counts)
		}
	}
	if counts["a"] != 3 || counts["b"] != 3 {
		t.Errorf("zones hold %v, want 3 and 3", counts)
	}
}

func TestPriorityPreemption(t *testing.T) {
	c := newCluster(t, simnode.Node{Name: "n1", CPU: "4"})
	for name, value := range map[string]int32{"low": 10, "high": 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := c.client.SchedulingV1().PriorityClasses().Create(c.ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"low-0", "low-1"} {
		p := st.Pod(name).Req("cpu", "2").Obj()
		p.Spec.PriorityClassName = "low"
		c.create(p)
		c.nodeOf(name)
	}
	high := st.Pod("high").Req("cpu", "2").Obj()
	high.Spec.PriorityClassName = "high"
	c.create(high)
	if node := c.nodeOf("high"); node != "n1" {
		t.Fatalf("high on %s", node)
	}
	// One low pod made room; its FailedScheduling event reads as upstream's
	// once preemption succeeded (no preemption part).
	if _, msg := c.event("high", "FailedScheduling"); msg != "0/1 nodes are available: 1 Insufficient cpu." {
		t.Errorf("FailedScheduling: %q", msg)
	}
	var victims []string
	for _, name := range []string{"low-0", "low-1"} {
		if _, err := c.client.CoreV1().Pods("default").Get(c.ctx, name, metav1.GetOptions{}); err != nil {
			victims = append(victims, name)
		}
	}
	if len(victims) != 1 {
		t.Fatalf("victims %v, want exactly one low pod", victims)
	}
	if typ, msg := c.event(victims[0], "Preempted"); typ != v1.EventTypeNormal || msg != fmt.Sprintf("Preempted by pod %s on node n1", c.get("high").UID) {
		t.Errorf("Preempted event: %s %q", typ, msg)
	}
}

func TestVolumeBindingLocalVolumes(t *testing.T) {
	c := newCluster(t, simnode.Node{Name: "n1"}, simnode.Node{Name: "n2"}, simnode.Node{Name: "n3"})
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wffc}
	if _, err := c.client.StorageV1().StorageClasses().Create(c.ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The PV controller's part: pv-n2 is bound to claim "bound", pv-n3 available.
	for pv, node := range map[string]string{"pv-n2": "n2", "pv-n3": "n3"} {
		obj := localPV(pv, node)
		phase := v1.VolumeAvailable
		if pv == "pv-n2" {
			obj.Spec.ClaimRef, phase = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "bound"}, v1.VolumeBound
		}
		created, err := c.client.CoreV1().PersistentVolumes().Create(c.ctx, obj, metav1.CreateOptions{})
		if err == nil {
			created.Status.Phase = phase
			_, err = c.client.CoreV1().PersistentVolumes().UpdateStatus(c.ctx, created, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for claim, volume := range map[string]string{"bound": "pv-n2", "waiting": ""} {
		if _, err := c.client.CoreV1().PersistentVolumeClaims("default").Create(c.ctx, pvc(claim, volume), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A claim bound to a local volume pins the pod to the volume's node.
	c.create(st.Pod("pinned").PVC("bound").Obj())
	if node := c.nodeOf("pinned"); node != "n2" {
		t.Errorf("pinned on %s, want n2", node)
	}
	// A WaitForFirstConsumer claim: the scheduler picks the node of a free
	// volume (pv-n2 is taken), binds the volume to the claim, and binds the
	// pod once the claim is bound (here the test plays the PV controller).
	c.create(st.Pod("consumer").PVC("waiting").Obj())
	envtest.EventuallyTrue(t, "pv-n3 to be claimed", func() bool {
		pv, err := c.client.CoreV1().PersistentVolumes().Get(c.ctx, "pv-n3", metav1.GetOptions{})
		return err == nil && pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Name == "waiting"
	})
	claim, err := c.client.CoreV1().PersistentVolumeClaims("default").Get(c.ctx, "waiting", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim.Spec.VolumeName = "pv-n3"
	if _, err := c.client.CoreV1().PersistentVolumeClaims("default").Update(c.ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if node := c.nodeOf("consumer"); node != "n3" {
		t.Errorf("consumer on %s, want n3", node)
	}
	c.create(st.Pod("missing").PVC("nope").Obj())
	c.expectMessage("missing", `0/3 nodes are available: persistentvolumeclaim "nope" not found. `+
		"preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
}

func pvc(name, volume string) *v1.PersistentVolumeClaim {
	class := "local"
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: volume, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

func localPV(name, node string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{StorageClassName: "local", AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("10Gi")},
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/data/" + name}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}}}}
}
