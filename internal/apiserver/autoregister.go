package apiserver

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	aggregatorinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	"k8s.io/kube-aggregator/pkg/controllers/autoregister"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// apiServicePriority is where a group version sits in discovery: groups
// by descending group priority, a group's versions by descending version
// priority.
type apiServicePriority struct{ group, version int32 }

// builtinPriorities are upstream's APIService priorities of the group
// versions the server itself serves (kube-apiserver's table); a group
// version missing here gets no APIService, as upstream skips it.
var builtinPriorities = map[schema.GroupVersion]apiServicePriority{
	{Group: "", Version: "v1"}:                             {18000, 1},
	{Group: "apps", Version: "v1"}:                         {17800, 15},
	{Group: "events.k8s.io", Version: "v1"}:                {17750, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:        {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:         {17600, 15},
	{Group: "autoscaling", Version: "v1"}:                  {17500, 15},
	{Group: "autoscaling", Version: "v2"}:                  {17500, 30},
	{Group: "batch", Version: "v1"}:                        {17400, 15},
	{Group: "certificates.k8s.io", Version: "v1"}:          {17300, 15},
	{Group: "networking.k8s.io", Version: "v1"}:            {17200, 15},
	{Group: "policy", Version: "v1"}:                       {17100, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {17000, 15},
	{Group: "storage.k8s.io", Version: "v1"}:               {16800, 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:         {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}: {16700, 15},
	{Group: "scheduling.k8s.io", Version: "v1"}:            {16600, 15},
	{Group: "coordination.k8s.io", Version: "v1"}:          {16500, 15},
	{Group: "node.k8s.io", Version: "v1"}:                  {16300, 15},
	{Group: "discovery.k8s.io", Version: "v1"}:             {16200, 15},
	{Group: "resource.k8s.io", Version: "v1"}:              {16200, 21},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {16100, 21},
	{Group: "storagemigration.k8s.io", Version: "v1"}:      {15800, 15},
}

// The priorities of the APIServices of custom resources (upstream's CRD
// registration) and of metrics.k8s.io (those metrics-server registers
// with, so that replacing orch's is a like-for-like change).
var (
	customPriority  = apiServicePriority{1000, 100}
	metricsPriority = apiServicePriority{100, 100}
)

// localAPIService is the APIService of a group version served here.
func localAPIService(gv schema.GroupVersion, p apiServicePriority) *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group},
		Spec: apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version,
			GroupPriorityMinimum: p.group, VersionPriority: p.version},
	}
}

// builtinAPIServices are the APIServices of the built-in group versions
// among groups (metrics.k8s.io, which a user may hand to a metrics-server,
// excepted).
func builtinAPIServices(groups []apiGroup) []*apiregistrationv1.APIService {
	var out []*apiregistrationv1.APIService
	for _, g := range groups {
		if p, ok := builtinPriorities[g.gv]; ok {
			out = append(out, localAPIService(g.gv, p))
		}
	}
	return out
}

// runAutoRegister keeps an APIService for every group version the server
// serves itself, with upstream's autoregister controller: the built-in
// ones are made (or put back as they were) at start and then left to the
// user, as upstream's "onstart" ones; those of custom resources follow
// the served CRD versions (upstream's CRD registration). The one of
// metrics.k8s.io is only made when missing: a user who points it at a
// metrics-server keeps it so across restarts.
func (s *Server) runAutoRegister(ctx context.Context) error {
	client, err := aggregatorclient.NewForConfig(s.loopbackConfig())
	if err != nil {
		return err
	}
	factory := aggregatorinformers.NewSharedInformerFactory(client, 0)
	ctrl := autoregister.NewAutoRegisterController(factory.Apiregistration().V1().APIServices(), client.ApiregistrationV1())
	for _, svc := range builtinAPIServices(s.groups) {
		ctrl.AddAPIServiceToSyncOnStart(svc)
	}
	factory.StartWithContext(ctx)
	go ctrl.Run(1, ctx.Done())
	if s.serves(metricsv1beta1.SchemeGroupVersion) {
		go s.ensureMetricsAPIService(ctx, client)
	}
	registered := map[string]bool{}
	for {
		wanted := map[string]bool{}
		for _, g := range s.customGroups() {
			svc := localAPIService(g.gv, customPriority)
			wanted[svc.Name] = true
			if !registered[svc.Name] {
				ctrl.AddAPIServiceToSync(svc)
			}
		}
		for name := range registered {
			if !wanted[name] {
				ctrl.RemoveAPIServiceToSync(name)
			}
		}
		registered = wanted
		select {
		case <-ctx.Done():
			return nil
		case <-s.custom.changed:
		}
	}
}

// serves is true when gv is one of the server's own group versions.
func (s *Server) serves(gv schema.GroupVersion) bool {
	for _, g := range s.groups {
		if g.gv == gv {
			return true
		}
	}
	return false
}

// ensureMetricsAPIService creates the local APIService of metrics.k8s.io
// unless one exists, retrying until it has been seen or made.
func (s *Server) ensureMetricsAPIService(ctx context.Context, client aggregatorclient.Interface) {
	svc := localAPIService(metricsv1beta1.SchemeGroupVersion, metricsPriority)
	for {
		_, err := client.ApiregistrationV1().APIServices().Create(ctx, svc, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return
		}
		s.log.Debug("cannot create the APIService of metrics.k8s.io yet", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}
