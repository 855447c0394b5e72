package gateway

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
	gwlisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"
)

// Listers are the listers of the Gateway API objects Build reads, shared
// by the agents' front door and the server's status controller.
type Listers struct {
	classes  gwlisters.GatewayClassLister
	gateways gwlisters.GatewayLister
	routes   gwlisters.HTTPRouteLister
	grants   gwlisters.ReferenceGrantLister
}

// Follow asks f for the four informers, with h on each, and returns their
// listers and what tells they have synced; the caller starts f.
func Follow(f gwinformers.SharedInformerFactory, h cache.ResourceEventHandler) (*Listers, []cache.InformerSynced, error) {
	v := f.Gateway().V1()
	l := &Listers{classes: v.GatewayClasses().Lister(), gateways: v.Gateways().Lister(), routes: v.HTTPRoutes().Lister(),
		grants: v.ReferenceGrants().Lister()}
	var synced []cache.InformerSynced
	for _, inf := range []cache.SharedIndexInformer{v.GatewayClasses().Informer(), v.Gateways().Informer(),
		v.HTTPRoutes().Informer(), v.ReferenceGrants().Informer()} {
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return nil, nil, fmt.Errorf("gateway: watch: %w", err)
		}
		synced = append(synced, reg.HasSynced)
	}
	return l, synced, nil
}

// Fill lists the objects into in.
func (l *Listers) Fill(in *Input) error {
	var err error
	if in.Classes, err = l.classes.List(labels.Everything()); err != nil {
		return err
	}
	if in.Gateways, err = l.gateways.List(labels.Everything()); err != nil {
		return err
	}
	if in.Routes, err = l.routes.List(labels.Everything()); err != nil {
		return err
	}
	in.Grants, err = l.grants.List(labels.Everything())
	return err
}
