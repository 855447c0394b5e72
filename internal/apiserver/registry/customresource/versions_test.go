package customresource

import (
	"reflect"
	"testing"
)

func TestVersions(t *testing.T) {
	crd := crdFrom(t, widgetsCRD)
	if got := StorageVersion(crd); got != "v1" {
		t.Errorf("StorageVersion = %q, want v1", got)
	}
	if got := ServedVersions(crd); !reflect.DeepEqual(got, []string{"v1", "v2"}) {
		t.Errorf("ServedVersions = %v, want [v1 v2]", got)
	}
	crd.Spec.Versions[0].Storage = false
	if got := StorageVersion(crd); got != "" {
		t.Errorf("StorageVersion without a storage version = %q, want empty", got)
	}
}

func TestDeprecationWarning(t *testing.T) {
	custom := "v1 is going away"
	tests := []struct {
		name      string
		deprecate []string // versions marked deprecated
		customV1  bool
		version   string
		want      string
	}{
		{name: "not deprecated", version: "v1", want: ""},
		{name: "default names the newest newer served version", deprecate: []string{"v1"}, version: "v1", want: "example.com/v1 Widget is deprecated; use example.com/v2 Widget"},
		{name: "no newer version to suggest", deprecate: []string{"v2"}, version: "v2", want: "example.com/v2 Widget is deprecated"},
		{name: "the CRD's own warning", deprecate: []string{"v1"}, customV1: true, version: "v1", want: custom},
		{name: "no such version", version: "v9", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := crdFrom(t, widgetsCRD)
			for i := range crd.Spec.Versions {
				for _, d := range tt.deprecate {
					if crd.Spec.Versions[i].Name == d {
						crd.Spec.Versions[i].Deprecated = true
					}
				}
				if tt.customV1 && crd.Spec.Versions[i].Name == "v1" {
					crd.Spec.Versions[i].DeprecationWarning = &custom
				}
			}
			if got := DeprecationWarning(crd, tt.version); got != tt.want {
				t.Errorf("DeprecationWarning(%s) = %q, want %q", tt.version, got, tt.want)
			}
		})
	}
}
