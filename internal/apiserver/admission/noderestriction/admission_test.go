package noderestriction

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/authz"
)

// want is the outcome of a case: allowed (all empty), a Forbidden with
// exactly msg (or containing part), or a NotFound.
type want struct {
	msg      string
	part     string
	notFound bool
}

type admitCase struct {
	name string
	req  Request
	want want
}

func run(t *testing.T, cases []admitCase, l Lookup) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Admit(context.Background(), tc.req, l)
			switch w := tc.want; {
			case w.notFound:
				if !apierrors.IsNotFound(err) {
					t.Fatalf("got %v, want NotFound", err)
				}
			case w.msg == "" && w.part == "":
				if err != nil {
					t.Fatalf("got %v, want allowed", err)
				}
			default:
				if !apierrors.IsForbidden(err) {
					t.Fatalf("got %v, want Forbidden", err)
				}
				if w.msg != "" && err.Error() != w.msg {
					t.Fatalf("got  %q\nwant %q", err.Error(), w.msg)
				}
				if !strings.Contains(err.Error(), w.part) {
					t.Fatalf("got %q, want it to contain %q", err.Error(), w.part)
				}
			}
		})
	}
}

func podReq(op, sub, name string, obj, old runtime.Object) Request {
	return Request{User: mynode, Operation: op, Resource: "pods", Subresource: sub, Namespace: "ns", Name: name, Object: obj, OldObject: old}
}

func TestUsers(t *testing.T) {
	p := testPod("x", "othernode")
	run(t, []admitCase{
		{"other users pass", Request{User: bob, Operation: Create, Resource: "pods", Namespace: "ns", Object: p}, want{}},
		{"a node name outside system:nodes passes", Request{User: authz.User{Name: "system:node:mynode"}, Operation: Create, Resource: "pods", Object: p}, want{}},
		{"a node without a name", Request{User: authz.User{Name: "system:node:", Groups: []string{authz.NodesGroup}}, Operation: Create, Resource: "pods", Namespace: "ns", Object: p},
			want{msg: `pods "x" is forbidden: could not determine node from user "system:node:"`}},
		{"CONNECT is not admitted here", podReq(Connect, "exec", "otherpod", nil, nil), want{}},
		{"other resources pass", Request{User: mynode, Operation: Create, Resource: "configmaps", Namespace: "ns", Object: &corev1.ConfigMap{}}, want{}},
	}, fixtureStore().lookup())
}

func TestPods(t *testing.T) {
	mirror := mirrorPod("mymirror", "mynode")
	mirrorWith := func(f func(p *corev1.Pod)) *corev1.Pod {
		p := mirror.DeepCopy()
		f(p)
		return p
	}
	owner := func(f func(o *metav1.OwnerReference)) *corev1.Pod {
		return mirrorWith(func(p *corev1.Pod) { f(&p.OwnerReferences[0]) })
	}
	refusal := func(what string) want {
		return want{msg: `pods "mymirror" is forbidden: node "mynode" can not create pods that reference ` + what}
	}
	create := func(p *corev1.Pod) Request { return podReq(Create, "", p.Name, p, nil) }
	run(t, []admitCase{
		{"a mirror pod bound to itself", create(mirror), want{}},
		{"the name comes from the object on create", podReq(Create, "", "", testPod("named", "mynode"), nil),
			want{msg: `pods "named" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "mynode" can only create mirror pods`}},
		{"a generated name names the refusal", podReq(Create, "", "", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}, nil),
			want{msg: `pods "gen-" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "mynode" can only create mirror pods`}},
		{"a mirror pod of another node", create(mirrorPod("mymirror", "othernode")),
			want{msg: `pods "mymirror" is forbidden: node "mynode" can only create pods with spec.nodeName set to itself`}},
		{"an unbound mirror pod", create(mirrorPod("mymirror", "")), want{part: "can only create pods with spec.nodeName set to itself"}},
		{"no owner", create(mirrorWith(func(p *corev1.Pod) { p.OwnerReferences = nil })),
			want{msg: `pods "mymirror" is forbidden: node "mynode" can only create pods with an owner reference set to itself`}},
		{"two owners", create(mirrorWith(func(p *corev1.Pod) { p.OwnerReferences = append(p.OwnerReferences, p.OwnerReferences[0]) })),
			want{msg: `pods "mymirror" is forbidden: node "mynode" can only create pods with a single owner reference set to itself`}},
		{"owned by another node", create(owner(func(o *metav1.OwnerReference) { o.Name = "othernode" })), want{part: "can only create pods with an owner reference set to itself"}},
		{"owned by a replica set", create(owner(func(o *metav1.OwnerReference) { o.Kind, o.APIVersion = "ReplicaSet", "apps/v1" })), want{part: "owner reference set to itself"}},
		{"owned but not controlled", create(owner(func(o *metav1.OwnerReference) { o.Controller = nil })),
			want{msg: `pods "mymirror" is forbidden: node "mynode" can only create pods with a controller owner reference set to itself`}},
		{"blocking owner deletion", create(owner(func(o *metav1.OwnerReference) { o.BlockOwnerDeletion = ptr.To(true) })),
			want{msg: `pods "mymirror" is forbidden: node "mynode" must not set blockOwnerDeletion on an owner reference`}},
		{"the owner's UID is not the node's", create(owner(func(o *metav1.OwnerReference) { o.UID = "stale" })),
			want{msg: `pods "mymirror" is forbidden: node mynode UID mismatch: expected stale got mynode-uid`}},
		{"a service account", create(mirrorWith(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" })), refusal("serviceaccounts")},
		{"a secret volume", create(mirrorWith(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
		})), refusal("secrets")},
		{"a config map in env", create(mirrorWith(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}}}
		})), refusal("configmaps")},
		{"a claim", create(withVolumes(mirror, claimVolume("c"))), refusal("persistentvolumeclaims")},
		{"an ephemeral volume", create(withVolumes(mirror, corev1.Volume{Name: "e", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}})),
			refusal("persistentvolumeclaims (via ephemeral volumes)")},
		{"a projected token", create(withVolumes(mirror, projectedToken(""))), refusal("serviceaccounts (via projected volumes)")},
		{"a CSI volume", create(withVolumes(mirror, csiVolume("d"))), refusal("csidrivers (via CSI volumes)")},
		{"resource claims", create(mirrorWith(func(p *corev1.Pod) { p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "c"}} })), refusal("resourceclaims")},
		{"a volume of no known type", create(withVolumes(mirror, corev1.Volume{Name: "v"})),
			want{msg: `pods "mymirror" is forbidden: unknown volume type for volume  "v"`}},
		{"host path and empty dir volumes", create(withVolumes(mirror,
			corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}},
			corev1.Volume{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})), want{}},
		{"not a pod", podReq(Create, "", "x", &corev1.Secret{}, nil), want{part: "unexpected type *v1.Secret"}},

		{"update a pod", podReq(Update, "", "mypod", testPod("mypod", "mynode"), testPod("mypod", "mynode")),
			want{msg: `pods "mypod" is forbidden: unexpected operation "UPDATE", node "mynode" can only create and delete mirror pods`}},
		{"delete a pod bound to itself", podReq(Delete, "", "mypod", nil, nil), want{}},
		{"delete its mirror pod", podReq(Delete, "", "mymirror", nil, nil), want{}},
		{"delete another node's pod", podReq(Delete, "", "otherpod", nil, nil),
			want{msg: `pods "otherpod" is forbidden: node "mynode" can only delete pods with spec.nodeName set to itself`}},
		{"delete an unbound pod", podReq(Delete, "", "unbound", nil, nil), want{part: "can only delete pods with spec.nodeName set to itself"}},
		{"delete a missing pod", podReq(Delete, "", "nopod", nil, nil), want{notFound: true}},
		{"the pod lookup fails", podReq(Delete, "", "broken", nil, nil), want{msg: `pods "broken" is forbidden: the cache is not ready`}},
		{"other subresources", podReq(Create, "exec", "mypod", nil, nil),
			want{msg: `pods "mypod" is forbidden: unexpected pod subresource "exec", only 'status' and 'eviction' are allowed`}},
		{"pod binding", podReq(Create, "binding", "mypod", nil, nil), want{part: `unexpected pod subresource "binding"`}},
	}, fixtureStore().lookup())

	// Without the Node in the cache the owner's UID cannot be checked.
	run(t, []admitCase{{"the node is not known yet", create(mirror), want{notFound: true}}}, Lookup{})
}

func TestPodStatus(t *testing.T) {
	mine, other := testPod("mypod", "mynode"), testPod("otherpod", "othernode")
	changed := func(f func(p *corev1.Pod)) *corev1.Pod {
		p := mine.DeepCopy()
		f(p)
		return p
	}
	status := func(obj, old *corev1.Pod) Request { return podReq(Update, "status", obj.Name, obj, old) }
	run(t, []admitCase{
		{"its own pod", status(changed(func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }), mine), want{}},
		{"another node's pod", status(other, other),
			want{msg: `pods "otherpod" is forbidden: node "mynode" can only update pod status for pods with spec.nodeName set to itself`}},
		{"a pod moved onto it in the update", status(changed(func(p *corev1.Pod) {}), other), want{part: "can only update pod status for pods with spec.nodeName set to itself"}},
		{"labels", status(changed(func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }), mine),
			want{msg: `pods "mypod" is forbidden: node "mynode" cannot update labels through pod status`}},
		{"resource claim statuses", status(changed(func(p *corev1.Pod) {
			p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "c", ResourceClaimName: ptr.To("x")}}
		}), mine), want{msg: `pods "mypod" is forbidden: node "mynode" cannot update resource claim statues`}},
		{"extended resource claim status", status(changed(func(p *corev1.Pod) {
			p.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: "x"}
		}), mine), want{msg: `pods "mypod" is forbidden: node "mynode" cannot update extended resource claim status`}},
		{"create status", podReq(Create, "status", "mypod", mine, nil), want{msg: `pods "mypod" is forbidden: unexpected operation "CREATE"`}},
		{"delete status", podReq(Delete, "status", "mypod", nil, nil), want{part: `unexpected operation "DELETE"`}},
		{"not a pod", podReq(Update, "status", "mypod", &corev1.Node{}, mine), want{part: "unexpected type *v1.Node"}},
	}, fixtureStore().lookup())
}

func TestEviction(t *testing.T) {
	eviction := func(name string) *policyv1.Eviction {
		return &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	run(t, []admitCase{
		{"its own pod", podReq(Create, "eviction", "mypod", eviction("mypod"), nil), want{}},
		{"its own pod, named only by the eviction", podReq(Create, "eviction", "", eviction("mypod"), nil), want{}},
		{"another node's pod", podReq(Create, "eviction", "otherpod", eviction("otherpod"), nil),
			want{msg: `pods "otherpod" is forbidden: node mynode can only evict pods with spec.nodeName set to itself`}},
		{"the path's pod wins over the eviction's", podReq(Create, "eviction", "otherpod", eviction("mypod"), nil), want{part: "can only evict pods"}},
		{"no pod named", podReq(Create, "eviction", "", eviction(""), nil), want{msg: `pods "Unknown" is forbidden: could not determine pod from request data`}},
		{"a missing pod", podReq(Create, "eviction", "nopod", eviction("nopod"), nil), want{notFound: true}},
		{"update", podReq(Update, "eviction", "mypod", eviction("mypod"), nil), want{msg: `pods "mypod" is forbidden: unexpected operation UPDATE`}},
		{"not an eviction", podReq(Create, "eviction", "mypod", testPod("mypod", "mynode"), nil), want{part: "unexpected type *v1.Pod"}},
	}, fixtureStore().lookup())
}

func TestClaimStatus(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", ResourceVersion: "5"},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv"},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	changed := func(f func(c *corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		c := claim.DeepCopy()
		f(c)
		return c
	}
	req := func(op, sub string, obj, old *corev1.PersistentVolumeClaim) Request {
		r := Request{User: mynode, Operation: op, Resource: "persistentvolumeclaims", Subresource: sub, Namespace: "ns", Name: "data", OldObject: old}
		if obj != nil {
			r.Object = obj
		}
		return r
	}
	gi := resource.MustParse("2Gi")
	run(t, []admitCase{
		{"capacity, conditions and allocation", req(Update, "status", changed(func(c *corev1.PersistentVolumeClaim) {
			c.ResourceVersion = ""
			c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: gi}
			c.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: gi}
			c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizeInProgress}
			c.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}
			c.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
		}), claim), want{}},
		{"the phase", req(Update, "status", changed(func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimLost }), claim),
			want{part: `persistentvolumeclaims "data" is forbidden: node "mynode" is not allowed to update fields other than status.quantity and status.conditions: `}},
		{"labels", req(Update, "status", changed(func(c *corev1.PersistentVolumeClaim) { c.Labels = map[string]string{"a": "b"} }), claim),
			want{part: "is not allowed to update fields other than status.quantity and status.conditions"}},
		{"create status", req(Create, "status", claim, nil), want{msg: `persistentvolumeclaims "data" is forbidden: unexpected operation "CREATE"`}},
		{"the claim itself", req(Update, "", claim, claim), want{msg: `persistentvolumeclaims "data" is forbidden: may only update PVC status`}},
		{"delete a claim", req(Delete, "", nil, nil), want{part: "may only update PVC status"}},
	}, fixtureStore().lookup())
}

func TestLeasesAndCSINodes(t *testing.T) {
	lease := func(op, ns, name string, obj runtime.Object) Request {
		return Request{User: mynode, Operation: op, APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: ns, Name: name, Object: obj}
	}
	csiNode := func(op, name string, obj runtime.Object) Request {
		return Request{User: mynode, Operation: op, APIGroup: "storage.k8s.io", Resource: "csinodes", Name: name, Object: obj}
	}
	named := func(name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	run(t, []admitCase{
		{"create its lease", lease(Create, "kube-node-lease", "", named("mynode")), want{}},
		{"create another node's lease", lease(Create, "kube-node-lease", "", named("othernode")),
			want{msg: `leases.coordination.k8s.io "othernode" is forbidden: can only access node lease with the same name as the requesting node`}},
		{"a lease elsewhere", lease(Update, "kube-system", "mynode", named("mynode")),
			want{msg: `leases.coordination.k8s.io "mynode" is forbidden: can only access leases in the "kube-node-lease" system namespace`}},
		{"update its lease", lease(Update, "kube-node-lease", "mynode", named("mynode")), want{}},
		{"update another lease", lease(Update, "kube-node-lease", "othernode", named("othernode")), want{part: "can only access node lease with the same name"}},
		{"delete its lease", lease(Delete, "kube-node-lease", "mynode", nil), want{}},
		{"create its CSINode", csiNode(Create, "", named("mynode")), want{}},
		{"create another CSINode", csiNode(Create, "", named("othernode")),
			want{msg: `csinodes.storage.k8s.io "othernode" is forbidden: can only access CSINode with the same name as the requesting node`}},
		{"update another CSINode", csiNode(Update, "othernode", named("othernode")), want{part: "can only access CSINode with the same name"}},
		{"delete its CSINode", csiNode(Delete, "mynode", nil), want{}},
	}, fixtureStore().lookup())
}

func TestTokens(t *testing.T) {
	s := fixtureStore()
	mypod := s.pods["ns/mypod"]
	token := func(obj runtime.Object) Request {
		return Request{User: mynode, Operation: Create, Resource: "serviceaccounts", Subresource: "token", Namespace: "ns", Name: "mysa", Object: obj}
	}
	for_ := func(pod string, audiences ...string) Request {
		return token(tokenRequest(pod, s.pods["ns/"+pod].UID, audiences...))
	}
	notFound := func(audience string) want {
		return want{msg: `serviceaccounts "mysa" is forbidden: audience "` + audience + `" not found in pod spec volume, system:node:mynode is not authorized to request tokens for this audience`}
	}
	asked := &authz.Attributes{}
	l := s.lookup()
	l.Authorizer = audienceAuthorizer{asked: asked}
	cases := []admitCase{
		{"other writes to service accounts", Request{User: mynode, Operation: Update, Resource: "serviceaccounts", Namespace: "ns", Name: "mysa", Object: &corev1.ServiceAccount{}}, want{}},
		{"not bound to anything", token(tokenRequest("", "")), want{msg: `serviceaccounts "mysa" is forbidden: node requested token not bound to a pod`}},
		{"bound to a secret", token(func() runtime.Object {
			tr := tokenRequest("mypod", mypod.UID)
			tr.Spec.BoundObjectRef.Kind = "Secret"
			return tr
		}()), want{part: "node requested token not bound to a pod"}},
		{"bound without a uid", token(tokenRequest("mypod", "")), want{msg: `serviceaccounts "mysa" is forbidden: node requested token with a pod binding without a uid`}},
		{"bound to a missing pod", token(tokenRequest("nopod", "x")), want{notFound: true}},
		{"bound to a recreated pod", token(tokenRequest("mypod", "old-uid")),
			want{msg: `serviceaccounts "mysa" is forbidden: the UID in the bound object reference (old-uid) does not match the UID in record. The object might have been deleted and then recreated`}},
		{"bound to another node's pod", for_("otherpod"), want{msg: `serviceaccounts "mysa" is forbidden: node requested token bound to a pod scheduled on a different node`}},
		{"not a token request", token(&corev1.Pod{}), want{part: "unexpected type *v1.Pod"}},

		// ServiceAccountNodeAudienceRestriction.
		{"the API audience of the default projected token", for_("default-psat"), want{}},
		{"an audience of a projected token", for_("psat", "foo"), want{}},
		{"two audiences", for_("psat", "foo", "bar"), want{msg: `serviceaccounts "mysa" is forbidden: node may only request 0 or 1 audiences`}},
		{"an audience the pod does not use", for_("psat", "bar"), notFound("bar")},
		{"the API audience when the pod has none", for_("mypod"), notFound("")},
		{"an audience the node may ask for anyway", for_("mypod", "granted"), want{}},
		{"an inline CSI driver's audience", for_("csi", "vault"), want{}},
		{"an audience the inline CSI driver does not ask for", for_("csi", "other"), notFound("other")},
		{"an unknown CSI driver", for_("csi-missing", "vault"),
			want{msg: `serviceaccounts "mysa" is forbidden: error validating audience "vault": csidrivers.storage.k8s.io "missing.example.com" not found`}},
		{"a claim's CSI driver", for_("pvc", "vault"), want{}},
		{"an ephemeral volume's CSI driver", for_("eph", "vault"), want{}},
		{"a missing claim", for_("pvc-missing", "vault"), want{part: `error validating audience "vault": persistentvolumeclaims "no-claim" not found`}},
		{"a claim's missing volume", for_("pv-missing", "vault"), want{part: `error validating audience "vault": persistentvolumes "gone" not found`}},
		{"a missing claim does not matter when another volume uses the audience", for_("pvc-missing-and-csi", "vault"), want{}},
	}
	run(t, cases, l)
	// What the authorizer is asked for an audience the pod does not use.
	if err := Admit(context.Background(), for_("mypod", "granted"), l); err != nil {
		t.Fatal(err)
	}
	if asked.Verb != TokenAudienceVerb || asked.Resource != "granted" || asked.Namespace != "ns" || asked.Name != "mysa" ||
		asked.APIGroup != "" || asked.APIVersion != "v1" || !asked.ResourceRequest || asked.User.Name != mynode.Name {
		t.Errorf("the authorizer was asked %+v", *asked)
	}

	l.Authorizer = audienceAuthorizer{asked: asked, err: errors.New("no rules yet")}
	run(t, []admitCase{{"the authorizer fails", for_("mypod", "granted"),
		want{msg: `serviceaccounts "mysa" is forbidden: error validating audience "granted": no rules yet`}}}, l)
	l.Authorizer = nil
	run(t, []admitCase{{"no authorizer refuses", for_("mypod", "granted"), notFound("granted")}}, l)
}
