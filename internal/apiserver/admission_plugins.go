package apiserver

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// The admission plugins orch has, by upstream's names. Which run is the
// set AdmissionPlugins gives; the order they run in is upstream's.
const (
	pluginNamespaceLifecycle            = "NamespaceLifecycle"
	pluginLimitRanger                   = "LimitRanger"
	pluginServiceAccount                = "ServiceAccount"
	pluginNodeRestriction               = "NodeRestriction"
	pluginAlwaysPullImages              = "AlwaysPullImages"
	pluginPodSecurity                   = "PodSecurity"
	pluginPriority                      = "Priority"
	pluginDefaultTolerationSeconds      = "DefaultTolerationSeconds"
	pluginPodTolerationRestriction      = "PodTolerationRestriction"
	pluginDefaultStorageClass           = "DefaultStorageClass"
	pluginStorageObjectInUseProtection  = "StorageObjectInUseProtection"
	pluginRuntimeClass                  = "RuntimeClass"
	pluginDefaultIngressClass           = "DefaultIngressClass"
	pluginPersistentVolumeClaimResize   = "PersistentVolumeClaimResize"
	pluginCertificateApproval           = "CertificateApproval"
	pluginCertificateSigning            = "CertificateSigning"
	pluginCertificateSubjectRestriction = "CertificateSubjectRestriction"
	pluginMutatingAdmissionPolicy       = "MutatingAdmissionPolicy"
	pluginMutatingAdmissionWebhook      = "MutatingAdmissionWebhook"
	pluginValidatingAdmissionPolicy     = "ValidatingAdmissionPolicy"
	pluginValidatingAdmissionWebhook    = "ValidatingAdmissionWebhook"
	pluginResourceQuota                 = "ResourceQuota"
)

// admissionPluginsOff are the plugins orch has that are off unless
// enabled, as upstream's. NodeRestriction, off in a bare kube-apiserver, is
// on here as in kubeadm's and k3s's clusters.
var admissionPluginsOff = []string{pluginAlwaysPullImages, pluginPodTolerationRestriction}

// admissionPluginsElsewhere are upstream's other plugin names. Those on by
// default upstream are done elsewhere in orch (TaintNodesByCondition by the
// node lifecycle controller) or belong to APIs orch does not serve; disabling one is
// accepted and changes nothing, enabling one is refused.
var admissionPluginsElsewhere = []string{
	"AlwaysAdmit", "NamespaceAutoProvision", "NamespaceExists", "LimitPodHardAntiAffinityTopology",
	"TaintNodesByCondition", "ImagePolicyWebhook", "PodNodeSelector",
	"EventRateLimit", "ExtendedResourceToleration", "PodGroupProtection",
	"OwnerReferencesPermissionEnforcement", "ClusterTrustBundleAttest",
	"DenyServiceExternalIPs", "PodTopologyLabels", "NodeDeclaredFeatureValidator", "PodResizeValidator", "AlwaysDeny",
}

var admissionPluginsOrch = []string{
	pluginNamespaceLifecycle, pluginLimitRanger, pluginServiceAccount, pluginNodeRestriction,
	pluginAlwaysPullImages, pluginPodSecurity, pluginPriority, pluginDefaultTolerationSeconds,
	pluginPodTolerationRestriction, pluginDefaultStorageClass, pluginStorageObjectInUseProtection, pluginPersistentVolumeClaimResize, pluginRuntimeClass, pluginDefaultIngressClass,
	pluginCertificateApproval, pluginCertificateSigning, pluginCertificateSubjectRestriction,
	pluginMutatingAdmissionPolicy, pluginMutatingAdmissionWebhook, pluginValidatingAdmissionPolicy,
	pluginValidatingAdmissionWebhook, pluginResourceQuota,
}

// pluginSet is the admission plugins that run.
type pluginSet map[string]bool

// AdmissionPlugins is the set of plugins that run given
// --enable-admission-plugins and --disable-admission-plugins: orch's
// defaults, plus enable, minus disable. A name upstream does not have, or
// one orch has not built, is an error that lists what it has.
func AdmissionPlugins(enable, disable []string) (pluginSet, error) {
	set := pluginSet{}
	for _, name := range admissionPluginsOrch {
		set[name] = !slices.Contains(admissionPluginsOff, name)
	}
	for _, name := range enable {
		if slices.Contains(disable, name) {
			return nil, fmt.Errorf("admission plugin %q is both enabled and disabled", name)
		}
		if err := knownPlugin(name, true); err != nil {
			return nil, err
		}
		set[name] = true
	}
	for _, name := range disable {
		if err := knownPlugin(name, false); err != nil {
			return nil, err
		}
		if _, ok := set[name]; ok {
			set[name] = false
		}
	}
	return set, nil
}

func knownPlugin(name string, enabling bool) error {
	have := slices.Clone(admissionPluginsOrch)
	sort.Strings(have)
	switch {
	case slices.Contains(admissionPluginsOrch, name):
		return nil
	case slices.Contains(admissionPluginsElsewhere, name) && enabling:
		return fmt.Errorf("admission plugin %q is not implemented in orch (it has: %s)", name, strings.Join(have, ", "))
	case slices.Contains(admissionPluginsElsewhere, name):
		return nil
	}
	return fmt.Errorf("unknown admission plugin %q (orch has: %s)", name, strings.Join(have, ", "))
}

// on says whether plugin runs; a nil set (tests that build a Server by
// hand) runs orch's defaults.
func (p pluginSet) on(plugin string) bool {
	if p == nil {
		return !slices.Contains(admissionPluginsOff, plugin)
	}
	return p[plugin]
}

// Enabled lists the plugins that run, in upstream's order.
func (p pluginSet) Enabled() []string {
	var out []string
	for _, name := range admissionPluginsOrch {
		if p.on(name) {
			out = append(out, name)
		}
	}
	return out
}
