package noderestriction

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

func node(name string, f func(n *corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid"}}
	if f != nil {
		f(n)
	}
	return n
}

func labeled(value string, sets ...func(map[string]string, string)) func(*corev1.Node) {
	return func(n *corev1.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		for _, set := range sets {
			set(n.Labels, value)
		}
	}
}

// allowedLabels are labels a kubelet may set: its own, and any outside the
// kubernetes.io and k8s.io namespaces.
func allowedLabels(l map[string]string, v string) {
	for _, k := range []string{"foo", "example.com/foo", "kubelet.kubernetes.io/foo", "foo.kubelet.kubernetes.io/foo",
		"node.kubernetes.io/foo", "foo.node.kubernetes.io/foo"} {
		l[k] = v
	}
	for _, k := range kubeletapis.KubeletLabels() {
		l[k] = v
	}
}

// forbiddenLabels are labels reserved to the cluster's administrators.
func reservedLabels(l map[string]string, v string) {
	for _, k := range []string{"node-restriction.kubernetes.io/foo", "foo.node-restriction.kubernetes.io/foo", "other.kubernetes.io/foo", "other.k8s.io/foo"} {
		l[k] = v
	}
}

func TestNodes(t *testing.T) {
	const reserved = "foo.node-restriction.kubernetes.io/foo, node-restriction.kubernetes.io/foo, other.k8s.io/foo, other.kubernetes.io/foo"
	nodeReq := func(op, sub, name string, obj, old runtime.Object) Request {
		return Request{User: mynode, Operation: op, Resource: "nodes", Subresource: sub, Name: name, Object: obj, OldObject: old}
	}
	mine := node("mynode", nil)
	taintA := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "k", Value: "A", Effect: corev1.TaintEffectNoSchedule}}
	}
	taintB := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "k", Value: "B", Effect: corev1.TaintEffectNoSchedule}}
	}
	configA := func(n *corev1.Node) {
		n.Spec.ConfigSource = &corev1.NodeConfigSource{ConfigMap: &corev1.ConfigMapNodeConfigSource{Namespace: "ns", Name: "a", KubeletConfigKey: "k"}}
	}
	configB := func(n *corev1.Node) {
		n.Spec.ConfigSource = &corev1.NodeConfigSource{ConfigMap: &corev1.ConfigMapNodeConfigSource{Namespace: "ns", Name: "b", KubeletConfigKey: "k"}}
	}
	owned := func(n *corev1.Node) {
		n.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "othernode", UID: "x"}}
	}
	update := func(obj, old *corev1.Node) Request { return nodeReq(Update, "", "mynode", obj, old) }
	run(t, []admitCase{
		{"register itself", nodeReq(Create, "", "mynode", mine, nil), want{}},
		{"register itself, named by the object", nodeReq(Create, "", "", mine, nil), want{}},
		{"register with taints", nodeReq(Create, "", "mynode", node("mynode", taintA), nil), want{}},
		{"register with its own labels", nodeReq(Create, "", "mynode", node("mynode", labeled("v", allowedLabels)), nil), want{}},
		{"register with reserved labels", nodeReq(Create, "", "mynode", node("mynode", labeled("v", allowedLabels, reservedLabels)), nil),
			want{msg: `nodes "mynode" is forbidden: node "mynode" is not allowed to set the following labels: ` + reserved}},
		{"register with a configSource", nodeReq(Create, "", "mynode", node("mynode", configA), nil),
			want{msg: `nodes "mynode" is forbidden: node "mynode" is not allowed to create pods with a non-nil configSource`}},
		{"register another node", nodeReq(Create, "", "othernode", node("othernode", nil), nil),
			want{msg: `nodes "othernode" is forbidden: node "mynode" is not allowed to modify node "othernode"`}},
		{"register another node, named by the object", nodeReq(Create, "", "", node("othernode", nil), nil), want{part: `is not allowed to modify node "othernode"`}},
		{"update another node", nodeReq(Update, "", "othernode", node("othernode", nil), node("othernode", nil)), want{part: "is not allowed to modify node"}},
		{"another node's status", nodeReq(Update, "status", "othernode", node("othernode", nil), node("othernode", nil)), want{part: "is not allowed to modify node"}},
		{"delete another node", nodeReq(Delete, "", "othernode", nil, nil), want{part: "is not allowed to modify node"}},
		{"delete itself", nodeReq(Delete, "", "mynode", nil, nil), want{}},

		{"update itself", update(mine, mine), want{}},
		{"its status", nodeReq(Update, "status", "mynode", node("mynode", func(n *corev1.Node) { n.Status.Phase = corev1.NodeRunning }), mine), want{}},
		{"add taints", update(node("mynode", taintA), mine), want{msg: `nodes "mynode" is forbidden: node "mynode" is not allowed to modify taints`}},
		{"remove taints", update(mine, node("mynode", taintA)), want{part: "is not allowed to modify taints"}},
		{"change taints", update(node("mynode", taintB), node("mynode", taintA)), want{part: "is not allowed to modify taints"}},
		{"keep taints", update(node("mynode", taintA), node("mynode", taintA)), want{}},
		{"set owner references", update(node("mynode", owned), mine), want{msg: `nodes "mynode" is forbidden: node "mynode" is not allowed to modify ownerReferences`}},
		{"keep owner references", update(node("mynode", owned), node("mynode", owned)), want{}},
		{"set a configSource", update(node("mynode", configA), mine),
			want{msg: `nodes "mynode" is forbidden: node "mynode" is not allowed to update configSource to a new non-nil configSource`}},
		{"change the configSource", update(node("mynode", configB), node("mynode", configA)), want{part: "update configSource to a new non-nil configSource"}},
		{"keep the configSource", update(node("mynode", configA), node("mynode", configA)), want{}},
		{"drop the configSource", update(mine, node("mynode", configA)), want{}},
		{"add its own labels", update(node("mynode", labeled("v", allowedLabels)), mine), want{}},
		{"change its own labels", update(node("mynode", labeled("b", allowedLabels)), node("mynode", labeled("a", allowedLabels))), want{}},
		{"remove its own labels", update(mine, node("mynode", labeled("v", allowedLabels))), want{}},
		{"add reserved labels", update(node("mynode", labeled("v", reservedLabels)), mine), want{msg: `nodes "mynode" is forbidden: is not allowed to modify labels: ` + reserved}},
		{"remove reserved labels", update(mine, node("mynode", labeled("v", reservedLabels))), want{part: "is not allowed to modify labels: " + reserved}},
		{"change reserved labels", update(node("mynode", labeled("new", reservedLabels)), node("mynode", labeled("old", reservedLabels))), want{part: reserved}},
		{"add its own labels beside unchanged reserved ones",
			update(node("mynode", labeled("v", allowedLabels, reservedLabels)), node("mynode", labeled("v", reservedLabels))), want{}},
		{"not a node", nodeReq(Create, "", "mynode", &corev1.Pod{}, nil), want{part: "unexpected type *v1.Pod"}},
	}, fixtureStore().lookup())
}
