package apiserver

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAdmissionPlugins(t *testing.T) {
	for _, tc := range []struct {
		name            string
		enable, disable []string
		on, off         []string
		err             string
	}{
		{name: "defaults", on: []string{"NamespaceLifecycle", "NodeRestriction", "PodSecurity", "ResourceQuota", "DefaultStorageClass", "StorageObjectInUseProtection",
			"PersistentVolumeClaimResize", "CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction"}, off: []string{"AlwaysPullImages", "PodTolerationRestriction"}},
		{name: "enable one that is off", enable: []string{"AlwaysPullImages"}, on: []string{"AlwaysPullImages", "PodSecurity"}},
		{name: "disable one that is on", disable: []string{"PodSecurity", "ResourceQuota"}, on: []string{"LimitRanger"}, off: []string{"PodSecurity", "ResourceQuota"}},
		{name: "disable one orch does elsewhere", disable: []string{"TaintNodesByCondition"}, on: []string{"PodSecurity"}},
		{name: "enable one orch lacks", enable: []string{"EventRateLimit"}, err: `admission plugin "EventRateLimit" is not implemented in orch`},
		{name: "unknown", disable: []string{"PodSecurityPolicy"}, err: `unknown admission plugin "PodSecurityPolicy" (orch has: AlwaysPullImages, CertificateApproval, CertificateSigning`},
		{name: "both", enable: []string{"Priority"}, disable: []string{"Priority"}, err: `admission plugin "Priority" is both enabled and disabled`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := AdmissionPlugins(tc.enable, tc.disable)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range tc.on {
				if !set.on(name) || !slices.Contains(set.Enabled(), name) {
					t.Errorf("%s is off, want on", name)
				}
			}
			for _, name := range tc.off {
				if set.on(name) {
					t.Errorf("%s is on, want off", name)
				}
			}
		})
	}
	// A Server built without a set runs the defaults.
	if !pluginSet(nil).on(pluginPodSecurity) || pluginSet(nil).on(pluginAlwaysPullImages) {
		t.Error("a nil set does not run the defaults")
	}
}

// Of several default classes, the newest wins, then the first by name, as
// upstream's DefaultStorageClass and DefaultIngressClass choose.
func TestNewer(t *testing.T) {
	at := func(name string, sec int64) metav1.Object {
		return &metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(sec, 0)}
	}
	for _, tc := range []struct {
		a, b metav1.Object
		want bool
	}{
		{at("x", 2), at("y", 1), true},
		{at("x", 1), at("y", 2), false},
		{at("a", 1), at("b", 1), true},
		{at("b", 1), at("a", 1), false},
	} {
		if got := newer(tc.a, tc.b); got != tc.want {
			t.Errorf("newer(%s@%v, %s@%v) = %v, want %v", tc.a.GetName(), tc.a.GetCreationTimestamp(), tc.b.GetName(), tc.b.GetCreationTimestamp(), got, tc.want)
		}
	}
}
