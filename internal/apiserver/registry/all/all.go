// Package all lists every resource the apiserver serves.
package all

import (
	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/apiservices"
	"orch/internal/apiserver/registry/certificatesigningrequests"
	"orch/internal/apiserver/registry/clusterrolebindings"
	"orch/internal/apiserver/registry/clusterroles"
	"orch/internal/apiserver/registry/clustertrustbundles"
	"orch/internal/apiserver/registry/configmaps"
	"orch/internal/apiserver/registry/controllerrevisions"
	"orch/internal/apiserver/registry/cronjobs"
	"orch/internal/apiserver/registry/csidrivers"
	"orch/internal/apiserver/registry/csinodes"
	"orch/internal/apiserver/registry/csistoragecapacities"
	"orch/internal/apiserver/registry/customresourcedefinitions"
	"orch/internal/apiserver/registry/daemonsets"
	"orch/internal/apiserver/registry/deployments"
	"orch/internal/apiserver/registry/deviceclasses"
	"orch/internal/apiserver/registry/devicetaintrules"
	"orch/internal/apiserver/registry/endpoints"
	"orch/internal/apiserver/registry/endpointslices"
	"orch/internal/apiserver/registry/events"
	"orch/internal/apiserver/registry/eventsk8sio"
	"orch/internal/apiserver/registry/flowschemas"
	"orch/internal/apiserver/registry/horizontalpodautoscalers"
	"orch/internal/apiserver/registry/ingressclasses"
	"orch/internal/apiserver/registry/ingresses"
	"orch/internal/apiserver/registry/ipaddresses"
	"orch/internal/apiserver/registry/jobs"
	"orch/internal/apiserver/registry/leases"
	"orch/internal/apiserver/registry/limitranges"
	"orch/internal/apiserver/registry/mutatingadmissionpolicies"
	"orch/internal/apiserver/registry/mutatingadmissionpolicybindings"
	"orch/internal/apiserver/registry/mutatingwebhookconfigurations"
	"orch/internal/apiserver/registry/namespaces"
	"orch/internal/apiserver/registry/networkpolicies"
	"orch/internal/apiserver/registry/nodes"
	"orch/internal/apiserver/registry/persistentvolumeclaims"
	"orch/internal/apiserver/registry/persistentvolumes"
	"orch/internal/apiserver/registry/podcertificaterequests"
	"orch/internal/apiserver/registry/poddisruptionbudgets"
	"orch/internal/apiserver/registry/pods"
	"orch/internal/apiserver/registry/podtemplates"
	"orch/internal/apiserver/registry/priorityclasses"
	"orch/internal/apiserver/registry/prioritylevelconfigurations"
	"orch/internal/apiserver/registry/replicasets"
	"orch/internal/apiserver/registry/replicationcontrollers"
	"orch/internal/apiserver/registry/resourceclaims"
	"orch/internal/apiserver/registry/resourceclaimtemplates"
	"orch/internal/apiserver/registry/resourcequotas"
	"orch/internal/apiserver/registry/resourceslices"
	"orch/internal/apiserver/registry/rolebindings"
	"orch/internal/apiserver/registry/roles"
	"orch/internal/apiserver/registry/runtimeclasses"
	"orch/internal/apiserver/registry/secrets"
	"orch/internal/apiserver/registry/serviceaccounts"
	"orch/internal/apiserver/registry/servicecidrs"
	"orch/internal/apiserver/registry/services"
	"orch/internal/apiserver/registry/statefulsets"
	"orch/internal/apiserver/registry/storageclasses"
	"orch/internal/apiserver/registry/storageversionmigrations"
	"orch/internal/apiserver/registry/validatingadmissionpolicies"
	"orch/internal/apiserver/registry/validatingadmissionpolicybindings"
	"orch/internal/apiserver/registry/validatingwebhookconfigurations"
	"orch/internal/apiserver/registry/volumeattachments"
	"orch/internal/apiserver/registry/volumeattributesclasses"
)

// Resources is every resource the apiserver serves, in discovery order:
// core/v1 first, then the groups in upstream's order.
func Resources() []registry.Resource {
	return []registry.Resource{
		namespaces.Resource(),
		pods.Resource(),
		services.Resource(),
		endpoints.Resource(),
		configmaps.Resource(),
		secrets.Resource(),
		serviceaccounts.Resource(),
		nodes.Resource(),
		events.Resource(),
		persistentvolumes.Resource(),
		persistentvolumeclaims.Resource(),
		resourcequotas.Resource(),
		limitranges.Resource(),
		podtemplates.Resource(),
		replicationcontrollers.Resource(),
		// Upstream's aggregator lists apiregistration.k8s.io first among the
		// groups, ahead of every APIService's priority.
		apiservices.Resource(),
		deployments.Resource(),
		replicasets.Resource(),
		statefulsets.Resource(),
		daemonsets.Resource(),
		controllerrevisions.Resource(),
		eventsk8sio.Resource(),
		horizontalpodautoscalers.Resource(),
		horizontalpodautoscalers.ResourceV1(),
		jobs.Resource(),
		cronjobs.Resource(),
		certificatesigningrequests.Resource(),
		clustertrustbundles.Resource(),
		podcertificaterequests.Resource(),
		// Upstream lists a group version's resources by name.
		ingressclasses.Resource(),
		ingresses.Resource(),
		ipaddresses.Resource(),
		networkpolicies.Resource(),
		servicecidrs.Resource(),
		poddisruptionbudgets.Resource(),
		roles.Resource(),
		rolebindings.Resource(),
		clusterroles.Resource(),
		clusterrolebindings.Resource(),
		csidrivers.Resource(),
		csinodes.Resource(),
		csistoragecapacities.Resource(),
		storageclasses.Resource(),
		volumeattachments.Resource(),
		volumeattributesclasses.Resource(),
		// admissionregistration.k8s.io shares its priority with
		// apiextensions.k8s.io and comes first by name; upstream lists a
		// group version's resources by name.
		mutatingadmissionpolicies.Resource(),
		mutatingadmissionpolicybindings.Resource(),
		mutatingwebhookconfigurations.Resource(),
		validatingadmissionpolicies.Resource(),
		validatingadmissionpolicybindings.Resource(),
		validatingwebhookconfigurations.Resource(),
		customresourcedefinitions.Resource(),
		priorityclasses.Resource(),
		leases.Resource(),
		runtimeclasses.Resource(),
		endpointslices.Resource(),
		// resource.k8s.io shares its priority with discovery.k8s.io and
		// comes after it by name.
		deviceclasses.Resource(),
		devicetaintrules.Resource(),
		resourceclaims.Resource(),
		resourceclaimtemplates.Resource(),
		resourceslices.Resource(),
		flowschemas.Resource(),
		prioritylevelconfigurations.Resource(),
		storageversionmigrations.Resource(),
	}
}
