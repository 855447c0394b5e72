package ingress

import (
	"context"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
	gwlisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"

	"orch/internal/gateway"
	"orch/internal/routing"
)

// gatewayAPI is the listers of the Gateway API objects (and Namespaces,
// for listeners that take routes by namespace selector).
type gatewayAPI struct {
	classes    gwlisters.GatewayClassLister
	gateways   gwlisters.GatewayLister
	routes     gwlisters.HTTPRouteLister
	grants     gwlisters.ReferenceGrantLister
	namespaces corelisters.NamespaceLister
}

// followGatewayAPI waits until Gateway API's definitions are served, then
// follows its objects with h and returns their listers once synced; nil
// when ctx ends first.
func followGatewayAPI(ctx context.Context, client kubernetes.Interface, gw gwclient.Interface, h cache.ResourceEventHandler, log *slog.Logger) *gatewayAPI {
	if !gateway.WaitServed(ctx, client.Discovery(), 10*time.Second) {
		return nil
	}
	f := gwinformers.NewSharedInformerFactory(gw, 0)
	cf := informers.NewSharedInformerFactory(client, 0)
	v := f.Gateway().V1()
	g := &gatewayAPI{classes: v.GatewayClasses().Lister(), gateways: v.Gateways().Lister(), routes: v.HTTPRoutes().Lister(),
		grants: v.ReferenceGrants().Lister(), namespaces: cf.Core().V1().Namespaces().Lister()}
	infs := []cache.SharedIndexInformer{v.GatewayClasses().Informer(), v.Gateways().Informer(), v.HTTPRoutes().Informer(),
		v.ReferenceGrants().Informer(), cf.Core().V1().Namespaces().Informer()}
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(h); err != nil {
			log.Error("Gateway API not followed", "err", err)
			return nil
		}
	}
	f.StartWithContext(ctx)
	cf.StartWithContext(ctx)
	go func() {
		<-ctx.Done()
		f.Shutdown()
		cf.Shutdown()
	}()
	for _, inf := range infs {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return nil
		}
	}
	log.Info("following Gateway API objects")
	return g
}

// input is the Gateway API part of what is served now.
func (g *gatewayAPI) input(secrets map[string]*v1.Secret, svcs *routing.Services) gateway.Input {
	in := gateway.Input{Secrets: secrets, Services: svcs}
	in.Classes, _ = g.classes.List(labels.Everything())
	in.Gateways, _ = g.gateways.List(labels.Everything())
	in.Routes, _ = g.routes.List(labels.Everything())
	in.Grants, _ = g.grants.List(labels.Everything())
	in.Namespaces, _ = g.namespaces.List(labels.Everything())
	return in
}
