package noderestriction

import (
	"context"
	"errors"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/authz"
)

var (
	mynode = authz.User{Name: "system:node:mynode", Groups: []string{authz.NodesGroup, authz.AuthenticatedGroup}}
	bob    = authz.User{Name: "bob", Groups: []string{authz.AuthenticatedGroup}}
)

func testPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}
}

// mirrorPod is a mirror pod of node with a valid owner reference.
func mirrorPod(name, node string) *corev1.Pod {
	p := testPod(name, node)
	p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: types.UID(node + "-uid"), Controller: ptr.To(true)}}
	return p
}

func withVolumes(p *corev1.Pod, v ...corev1.Volume) *corev1.Pod {
	p = p.DeepCopy()
	p.Spec.Volumes = append(p.Spec.Volumes, v...)
	return p
}

func projectedToken(audience string) corev1.Volume {
	return corev1.Volume{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: audience}}}}}}
}

func csiVolume(driver string) corev1.Volume {
	return corev1.Volume{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: driver}}}
}

func claimVolume(claim string) corev1.Volume {
	return corev1.Volume{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

func tokenRequest(pod string, uid types.UID, audiences ...string) *authenticationv1.TokenRequest {
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences}}
	if pod != "" {
		tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod, UID: uid}
	}
	return tr
}

// store is the objects the tests' lookups find.
type store struct {
	pods    map[string]*corev1.Pod
	nodes   map[string]*corev1.Node
	claims  map[string]*corev1.PersistentVolumeClaim
	volumes map[string]*corev1.PersistentVolume
	drivers map[string]*storagev1.CSIDriver
}

func (s store) lookup() Lookup {
	return Lookup{
		Pod: func(ns, name string) (*corev1.Pod, error) {
			if name == "broken" {
				return nil, errors.New("the cache is not ready")
			}
			if p, ok := s.pods[ns+"/"+name]; ok {
				return p, nil
			}
			return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
		},
		Node: func(name string) (*corev1.Node, error) {
			if n, ok := s.nodes[name]; ok {
				return n, nil
			}
			return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
		},
		Claim: func(ns, name string) (*corev1.PersistentVolumeClaim, error) {
			if c, ok := s.claims[ns+"/"+name]; ok {
				return c, nil
			}
			return nil, apierrors.NewNotFound(corev1.Resource("persistentvolumeclaims"), name)
		},
		Volume: func(name string) (*corev1.PersistentVolume, error) {
			if v, ok := s.volumes[name]; ok {
				return v, nil
			}
			return nil, apierrors.NewNotFound(corev1.Resource("persistentvolumes"), name)
		},
		CSIDriver: func(name string) (*storagev1.CSIDriver, error) {
			if d, ok := s.drivers[name]; ok {
				return d, nil
			}
			return nil, apierrors.NewNotFound(storagev1.Resource("csidrivers"), name)
		},
	}
}

func fixtureStore() store {
	s := store{pods: map[string]*corev1.Pod{}, nodes: map[string]*corev1.Node{
		"mynode": {ObjectMeta: metav1.ObjectMeta{Name: "mynode", UID: "mynode-uid"}},
	}}
	for _, p := range []*corev1.Pod{
		testPod("mypod", "mynode"), testPod("otherpod", "othernode"), testPod("unbound", ""), mirrorPod("mymirror", "mynode"),
		withVolumes(testPod("psat", "mynode"), projectedToken("foo")),
		withVolumes(testPod("default-psat", "mynode"), projectedToken("")),
		withVolumes(testPod("csi", "mynode"), csiVolume("csi.example.com")),
		withVolumes(testPod("csi-missing", "mynode"), csiVolume("missing.example.com")),
		withVolumes(testPod("pvc", "mynode"), claimVolume("claim")),
		withVolumes(testPod("pvc-missing", "mynode"), claimVolume("no-claim")),
		withVolumes(testPod("pv-missing", "mynode"), claimVolume("claim-without-pv")),
		withVolumes(testPod("pvc-missing-and-csi", "mynode"), claimVolume("no-claim"), csiVolume("csi.example.com")),
		withVolumes(testPod("eph", "mynode"), corev1.Volume{Name: "vol", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}),
	} {
		s.pods[p.Namespace+"/"+p.Name] = p
	}
	claim := func(name, volume string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
	}
	s.claims = map[string]*corev1.PersistentVolumeClaim{
		"ns/claim": claim("claim", "pv"), "ns/eph-vol": claim("eph-vol", "pv"), "ns/claim-without-pv": claim("claim-without-pv", "gone"),
	}
	s.volumes = map[string]*corev1.PersistentVolume{"pv": {ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com"}}}}}
	s.drivers = map[string]*storagev1.CSIDriver{"csi.example.com": {ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com"},
		Spec: storagev1.CSIDriverSpec{TokenRequests: []storagev1.TokenRequest{{Audience: "vault"}}}}}
	return s
}

// audienceAuthorizer allows the audience "granted" and records what it was asked.
type audienceAuthorizer struct {
	asked *authz.Attributes
	err   error
}

func (a audienceAuthorizer) Authorize(_ context.Context, attrs authz.Attributes) (authz.Decision, string, error) {
	*a.asked = attrs
	if a.err != nil {
		return authz.NoOpinion, "", a.err
	}
	if attrs.Verb == TokenAudienceVerb && attrs.Resource == "granted" {
		return authz.Allow, "", nil
	}
	return authz.NoOpinion, "", nil
}
