package customresource

import (
	"fmt"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/version"
)

// StorageVersion returns the name of the version crd is stored in, or ""
// when no version is marked as the storage version.
func StorageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// ServedVersions returns the names of the served versions of crd, in the
// order of spec.versions.
func ServedVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var served []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served = append(served, v.Name)
		}
	}
	return served
}

// DeprecationWarning is the warning upstream sends with every request for
// version of crd when that version is deprecated: its deprecationWarning,
// or by default "<group>/<version> <Kind> is deprecated", naming the newest
// served version that is not deprecated and is newer, if any. It is ""
// for a version that is not deprecated.
func DeprecationWarning(crd *apiextensionsv1.CustomResourceDefinition, name string) string {
	var deprecated *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			deprecated = &crd.Spec.Versions[i]
		}
	}
	if deprecated == nil || !deprecated.Deprecated {
		return ""
	}
	if deprecated.DeprecationWarning != nil {
		return *deprecated.DeprecationWarning
	}
	warning := fmt.Sprintf("%s/%s %s is deprecated", crd.Spec.Group, name, crd.Spec.Names.Kind)
	var newer []string
	for _, v := range crd.Spec.Versions {
		if v.Served && !v.Deprecated && version.CompareKubeAwareVersionStrings(name, v.Name) < 0 {
			newer = append(newer, v.Name)
		}
	}
	if len(newer) == 0 {
		return warning
	}
	sort.Slice(newer, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(newer[i], newer[j]) > 0 })
	return warning + fmt.Sprintf("; use %s/%s %s", crd.Spec.Group, newer[0], crd.Spec.Names.Kind)
}
