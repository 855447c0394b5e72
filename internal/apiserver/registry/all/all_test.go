package all

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestResources checks what kubectl and the handlers rely on across
// resources: no resource or kind twice, no short name for two different
// resource names (events in core and events.k8s.io share "ev", which kubectl
// resolves by group order), and each group version listed in one run (discovery keeps the order
// of first appearance).
func TestResources(t *testing.T) {
	resources := map[schema.GroupVersionResource]bool{}
	kinds := map[schema.GroupVersionKind]bool{}
	shortNames := map[string]string{}
	done := map[schema.GroupVersion]bool{}
	var current schema.GroupVersion
	for i, r := range Resources() {
		gvr, gvk := r.GroupVersion.WithResource(r.Resource), r.GroupVersion.WithKind(r.Kind)
		if resources[gvr] || kinds[gvk] {
			t.Errorf("%v (%s) listed twice", gvr, r.Kind)
		}
		resources[gvr], kinds[gvk] = true, true
		for _, s := range r.ShortNames {
			if other, taken := shortNames[s]; taken && other != r.Resource {
				t.Errorf("short name %q of %s is also %s's", s, r.Resource, other)
			}
			shortNames[s] = r.Resource
		}
		if i == 0 || r.GroupVersion != current {
			if done[r.GroupVersion] {
				t.Errorf("%s: group version %v listed apart from the rest of it", r.Resource, r.GroupVersion)
			}
			done[current], current = true, r.GroupVersion
		}
	}
	if !resources[schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}] {
		t.Error("customresourcedefinitions is not served")
	}
}

// TestGroupOrder checks the discovery order upstream's aggregator gives
// groups of equal priority (by name): admissionregistration.k8s.io, with
// its resources by name, right before apiextensions.k8s.io.
func TestGroupOrder(t *testing.T) {
	var got []string
	for _, r := range Resources() {
		if g := r.GroupVersion.Group; g == "admissionregistration.k8s.io" || g == "apiextensions.k8s.io" {
			got = append(got, r.Resource)
		}
	}
	want := []string{
		"mutatingadmissionpolicies", "mutatingadmissionpolicybindings", "mutatingwebhookconfigurations",
		"validatingadmissionpolicies", "validatingadmissionpolicybindings", "validatingwebhookconfigurations",
		"customresourcedefinitions",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// TestAggregatorGroupFirst checks that apiregistration.k8s.io comes right
// after core/v1 and before apps, as upstream's aggregator lists it first
// among the groups.
func TestAggregatorGroupFirst(t *testing.T) {
	var groups []string
	for _, r := range Resources() {
		if g := r.GroupVersion.String(); len(groups) == 0 || groups[len(groups)-1] != g {
			groups = append(groups, g)
		}
	}
	if len(groups) < 3 || !reflect.DeepEqual(groups[:3], []string{"v1", "apiregistration.k8s.io/v1", "apps/v1"}) {
		t.Errorf("group versions begin %v, want v1, apiregistration.k8s.io/v1, apps/v1", groups)
	}
}

// TestFlowControlAfterDiscovery checks that discovery.k8s.io and
// resource.k8s.io (upstream's group priority 16200 both, so by name) come
// right before flowcontrol.apiserver.k8s.io (16100), each with its
// resources by name.
func TestFlowControlAfterDiscovery(t *testing.T) {
	var got []string
	for _, r := range Resources() {
		switch r.GroupVersion.Group {
		case "discovery.k8s.io", "resource.k8s.io", "flowcontrol.apiserver.k8s.io":
			got = append(got, r.GroupVersion.String()+"/"+r.Resource)
		}
	}
	want := []string{"discovery.k8s.io/v1/endpointslices",
		"resource.k8s.io/v1/deviceclasses", "resource.k8s.io/v1/devicetaintrules", "resource.k8s.io/v1/resourceclaims",
		"resource.k8s.io/v1/resourceclaimtemplates", "resource.k8s.io/v1/resourceslices",
		"flowcontrol.apiserver.k8s.io/v1/flowschemas", "flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// TestLastGroups checks the order of the groups of lowest priority:
// coordination.k8s.io (16500), node.k8s.io (16300), discovery.k8s.io and
// resource.k8s.io (16200, by name), flowcontrol.apiserver.k8s.io (16100) and
// storagemigration.k8s.io (15800) last.
func TestLastGroups(t *testing.T) {
	var groups []string
	for _, r := range Resources() {
		if g := r.GroupVersion.String(); len(groups) == 0 || groups[len(groups)-1] != g {
			groups = append(groups, g)
		}
	}
	want := []string{"coordination.k8s.io/v1", "node.k8s.io/v1", "discovery.k8s.io/v1", "resource.k8s.io/v1", "flowcontrol.apiserver.k8s.io/v1", "storagemigration.k8s.io/v1"}
	if len(groups) < len(want) || !reflect.DeepEqual(groups[len(groups)-len(want):], want) {
		t.Errorf("group versions end %v, want %v", groups, want)
	}
}

// TestSortedGroups checks that the resources of networking.k8s.io/v1 and
// storage.k8s.io/v1 come by name, as upstream lists them.
func TestSortedGroups(t *testing.T) {
	got := map[string][]string{}
	for _, r := range Resources() {
		if gv := r.GroupVersion.String(); gv == "networking.k8s.io/v1" || gv == "storage.k8s.io/v1" {
			got[gv] = append(got[gv], r.Resource)
		}
	}
	want := map[string][]string{
		"networking.k8s.io/v1": {"ingressclasses", "ingresses", "ipaddresses", "networkpolicies", "servicecidrs"},
		"storage.k8s.io/v1":    {"csidrivers", "csinodes", "csistoragecapacities", "storageclasses", "volumeattachments", "volumeattributesclasses"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resources %v, want %v", got, want)
	}
}

// TestCertificatesBetweenBatchAndNetworking checks that
// certificates.k8s.io (upstream's group priority 17300) comes between
// batch (17400) and networking.k8s.io (17200), its resources by name.
func TestCertificatesBetweenBatchAndNetworking(t *testing.T) {
	var got []string
	for i, r := range Resources() {
		if r.GroupVersion.Group != "certificates.k8s.io" {
			continue
		}
		if len(got) == 0 {
			all := Resources()
			if prev, next := all[i-1].GroupVersion.Group, all[i+3].GroupVersion.Group; prev != "batch" || next != "networking.k8s.io" {
				t.Errorf("certificates.k8s.io comes after %q and before %q", prev, next)
			}
		}
		got = append(got, r.GroupVersion.String()+"/"+r.Resource)
	}
	want := []string{"certificates.k8s.io/v1/certificatesigningrequests", "certificates.k8s.io/v1/clustertrustbundles", "certificates.k8s.io/v1/podcertificaterequests"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}
