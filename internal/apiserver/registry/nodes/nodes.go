// Package nodes is the registry entry for core/v1 nodes.
package nodes

import (
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/podspec"
)

const (
	labelNodeRolePrefix = "node-role.kubernetes.io/"
	labelNodeRole       = "kubernetes.io/role"
)

var supportedTaintEffects = []string{string(corev1.TaintEffectNoExecute), string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule)}

// Resource returns the nodes entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Resource:     "nodes",
		Kind:         "Node",
		SingularName: "node",
		Namespaced:   false,
		ShortNames:   []string{"no"},
		New:          func() runtime.Object { return &corev1.Node{} },
		NewList:      func() runtime.Object { return &corev1.NodeList{} },
		HasStatus:    true,
		Default:      func(obj runtime.Object) { Default(obj.(*corev1.Node)) },
		Validate:     func(obj runtime.Object) field.ErrorList { return validate(obj.(*corev1.Node)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateUpdate(obj.(*corev1.Node), old.(*corev1.Node))
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Status", Type: "string", Description: "The status of the node"},
			{Name: "Roles", Type: "string", Description: "The roles of the node"},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
			{Name: "Version", Type: "string", Description: corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]},
			{Name: "Internal-IP", Type: "string", Priority: 1, Description: corev1.NodeStatus{}.SwaggerDoc()["addresses"]},
			{Name: "External-IP", Type: "string", Priority: 1, Description: corev1.NodeStatus{}.SwaggerDoc()["addresses"]},
			{Name: "OS-Image", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"]},
			{Name: "Kernel-Version", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"]},
			{Name: "Container-Runtime", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} { return row(obj.(*corev1.Node), now) },
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.unschedulable": strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)}
		},
	}
}

// Default copies capacity into allocatable when allocatable is unset, rounds
// the resource lists, and pairs podCIDR with podCIDRs.
func Default(node *corev1.Node) {
	s := &node.Status
	if s.Allocatable == nil && s.Capacity != nil {
		s.Allocatable = s.Capacity.DeepCopy()
	}
	podspec.RoundResourceList(s.Capacity)
	podspec.RoundResourceList(s.Allocatable)
	if len(node.Spec.PodCIDRs) == 0 && node.Spec.PodCIDR != "" {
		node.Spec.PodCIDRs = []string{node.Spec.PodCIDR}
	}
	if len(node.Spec.PodCIDRs) > 0 {
		node.Spec.PodCIDR = node.Spec.PodCIDRs[0]
	}
}

func validate(node *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	errs = append(errs, validateTaints(node.Spec.Taints, specPath.Child("taints"))...)

	cidrsPath := specPath.Child("podCIDRs")
	if len(node.Spec.PodCIDRs) > 2 {
		errs = append(errs, field.Invalid(cidrsPath, node.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
	}
	families := map[bool]bool{}
	for i, cidr := range node.Spec.PodCIDRs {
		prefix, err := netip.ParsePrefix(cidr)
		if err != nil {
			errs = append(errs, field.Invalid(cidrsPath.Index(i), cidr, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
			continue
		}
		if families[prefix.Addr().Is6()] {
			errs = append(errs, field.Invalid(cidrsPath, node.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
		}
		families[prefix.Addr().Is6()] = true
	}

	statusPath := field.NewPath("status")
	for _, list := range []struct {
		name  string
		items corev1.ResourceList
	}{{"capacity", node.Status.Capacity}, {"allocatable", node.Status.Allocatable}} {
		for name, q := range list.items {
			p := statusPath.Child(list.name).Key(string(name))
			errs = append(errs, podspec.ValidateResourceName(name, p)...)
			errs = append(errs, podspec.ValidateResourceQuantity(name, q, p)...)
		}
	}
	return errs
}

func validateTaints(taints []corev1.Taint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, t := range taints {
		p := path.Index(i)
		for _, msg := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
		}
		if t.Value != "" {
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
			}
		}
		switch {
		case t.Effect == "":
			errs = append(errs, field.Required(p.Child("effect"), ""))
		case !slices.Contains(supportedTaintEffects, string(t.Effect)):
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, supportedTaintEffects))
		}
		key := t.Key + "/" + string(t.Effect)
		if seen.Has(key) {
			dup := field.Duplicate(p, t)
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
		}
		seen.Insert(key)
	}
	return errs
}

// validateUpdate lets podCIDRs and providerID be set once, never changed.
func validateUpdate(node, old *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	if len(old.Spec.PodCIDRs) > 0 && !slices.Equal(old.Spec.PodCIDRs, node.Spec.PodCIDRs) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	if old.Spec.ProviderID != "" && old.Spec.ProviderID != node.Spec.ProviderID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	return errs
}

func row(node *corev1.Node, now time.Time) []interface{} {
	status := "Unknown"
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				status = "Ready"
			} else {
				status = "NotReady"
			}
		}
	}
	if node.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	roles := strings.Join(nodeRoles(node), ",")
	if roles == "" {
		roles = "<none>"
	}
	info := node.Status.NodeInfo
	return []interface{}{
		node.Name, status, roles, registry.Age(node.CreationTimestamp, now), info.KubeletVersion,
		address(node, corev1.NodeInternalIP), address(node, corev1.NodeExternalIP),
		unknown(info.OSImage), unknown(info.KernelVersion), unknown(info.ContainerRuntimeVersion),
	}
}

// nodeRoles reads node-role.kubernetes.io/<role> and kubernetes.io/role labels.
func nodeRoles(node *corev1.Node) []string {
	roles := sets.New[string]()
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, labelNodeRolePrefix):
			if role := strings.TrimPrefix(k, labelNodeRolePrefix); role != "" {
				roles.Insert(role)
			}
		case k == labelNodeRole && v != "":
			roles.Insert(v)
		}
	}
	out := roles.UnsortedList()
	sort.Strings(out)
	return out
}

func address(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

func unknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}
