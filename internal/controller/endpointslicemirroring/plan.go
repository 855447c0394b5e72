package endpointslicemirroring

import (
	"fmt"
	"sort"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

// changes is what turns the existing slices into the desired ones.
type changes struct {
	create []*discoveryv1.EndpointSlice
	// update holds copies of existing slices with the desired content.
	update []*discoveryv1.EndpointSlice
	delete []*discoveryv1.EndpointSlice
}

// plan matches each desired slice with an existing slice of the same
// address type and ports, and updates it if it differs. A desired slice
// with no match reuses a leftover existing slice of its address type (the
// address type of a slice cannot change), as upstream recycles them, or is
// created; the leftovers no desired slice reuses are deleted.
func plan(desired, existing []*discoveryv1.EndpointSlice) changes {
	existing = append([]*discoveryv1.EndpointSlice(nil), existing...)
	sort.Slice(existing, func(i, j int) bool { return existing[i].Name < existing[j].Name })
	byKey := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		byKey[sliceKey(s)] = append(byKey[sliceKey(s)], s)
	}
	var c changes
	var unmatched []*discoveryv1.EndpointSlice
	used := map[*discoveryv1.EndpointSlice]bool{}
	for _, want := range desired {
		k := sliceKey(want)
		if len(byKey[k]) == 0 {
			unmatched = append(unmatched, want)
			continue
		}
		cur := byKey[k][0]
		byKey[k] = byKey[k][1:]
		used[cur] = true
		if differs(cur, want) {
			c.update = append(c.update, withContent(cur, want))
		}
	}
	leftover := map[discoveryv1.AddressType][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		if !used[s] {
			leftover[s.AddressType] = append(leftover[s.AddressType], s)
		}
	}
	for _, want := range unmatched {
		if reuse := leftover[want.AddressType]; len(reuse) > 0 {
			leftover[want.AddressType] = reuse[1:]
			used[reuse[0]] = true
			c.update = append(c.update, withContent(reuse[0], want))
			continue
		}
		c.create = append(c.create, want)
	}
	for _, s := range existing {
		if !used[s] {
			c.delete = append(c.delete, s)
		}
	}
	return c
}

// sliceKey groups slices by address type and set of ports (in any order).
func sliceKey(s *discoveryv1.EndpointSlice) string {
	ports := make([]string, 0, len(s.Ports))
	for _, p := range s.Ports {
		ports = append(ports, fmt.Sprintf("%s/%d/%s/%s", ptr.Deref(p.Name, ""), ptr.Deref(p.Port, 0),
			ptr.Deref(p.Protocol, ""), ptr.Deref(p.AppProtocol, "-")))
	}
	sort.Strings(ports)
	return string(s.AddressType) + "|" + strings.Join(ports, ",")
}

// differs reports whether cur lacks something of want that the controller
// writes.
func differs(cur, want *discoveryv1.EndpointSlice) bool {
	eq := apiequality.Semantic.DeepEqual
	return !eq(cur.Endpoints, want.Endpoints) || !eq(cur.Ports, want.Ports) || !eq(cur.Labels, want.Labels) ||
		!eq(cur.Annotations, want.Annotations) || !eq(cur.OwnerReferences, want.OwnerReferences)
}

// withContent is a copy of cur with want's endpoints, ports, labels,
// annotations and owner.
func withContent(cur, want *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	s := cur.DeepCopy()
	s.Endpoints, s.Ports = want.Endpoints, want.Ports
	s.Labels, s.Annotations, s.OwnerReferences = want.Labels, want.Annotations, want.OwnerReferences
	return s
}
