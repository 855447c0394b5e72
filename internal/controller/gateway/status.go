package gateway

import (
	"context"
	"errors"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"orch/internal/gateway"
)

// writer writes the status Build computed where it differs from the
// stored one.
type writer struct {
	c   *Controller
	now time.Time
}

func (w *writer) write(ctx context.Context, in gateway.Input, res *gateway.Result, addrs []string) error {
	var errs []error
	for _, gc := range in.Classes {
		refused, ours := res.Classes[gc.Name]
		if !ours {
			continue
		}
		accepted := metav1.Condition{Type: string(gwv1.GatewayClassConditionStatusAccepted), Status: metav1.ConditionTrue,
			Reason: string(gwv1.GatewayClassReasonAccepted), ObservedGeneration: gc.Generation}
		if refused != "" {
			accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(gwv1.GatewayClassReasonInvalidParameters), refused
		}
		st := gc.Status.DeepCopy()
		st.SupportedFeatures = nil
		if refused == "" {
			for _, f := range gateway.SupportedFeatures {
				st.SupportedFeatures = append(st.SupportedFeatures, gwv1.SupportedFeature{Name: f})
			}
		}
		st.Conditions = w.merge(gc.Status.Conditions, []metav1.Condition{
			accepted,
			{Type: string(gwv1.GatewayClassConditionStatusSupportedVersion), Status: metav1.ConditionTrue, Reason: string(gwv1.GatewayClassReasonSupportedVersion), ObservedGeneration: gc.Generation},
		})
		if apiequality.Semantic.DeepEqual(&gc.Status, st) {
			continue
		}
		gc = gc.DeepCopy()
		gc.Status = *st
		_, err := w.c.gw.GatewayV1().GatewayClasses().UpdateStatus(ctx, gc, metav1.UpdateOptions{FieldManager: Name})
		errs = append(errs, ignoreGone(err))
	}
	for _, g := range in.Gateways {
		got := res.Gateways[g.Namespace+"/"+g.Name]
		if got == nil {
			continue
		}
		st := gwv1.GatewayStatus{}
		for _, a := range addrs {
			st.Addresses = append(st.Addresses, gwv1.GatewayStatusAddress{Type: ptrTo(gwv1.IPAddressType), Value: a})
		}
		conds := append([]metav1.Condition(nil), got.Conditions...)
		switch {
		case got.Programmed && len(addrs) > 0:
			conds = append(conds, metav1.Condition{Type: string(gwv1.GatewayConditionProgrammed), Status: metav1.ConditionTrue,
				Reason: string(gwv1.GatewayReasonProgrammed), ObservedGeneration: g.Generation})
		case got.Programmed:
			conds = append(conds, metav1.Condition{Type: string(gwv1.GatewayConditionProgrammed), Status: metav1.ConditionFalse,
				Reason: string(gwv1.GatewayReasonAddressNotAssigned), Message: "no node is Ready to serve it", ObservedGeneration: g.Generation})
		default:
			conds = append(conds, metav1.Condition{Type: string(gwv1.GatewayConditionProgrammed), Status: metav1.ConditionFalse,
				Reason: string(gwv1.GatewayReasonInvalid), Message: "no listener is valid", ObservedGeneration: g.Generation})
		}
		st.Conditions = w.merge(g.Status.Conditions, conds)
		for _, l := range got.Listeners {
			var old []metav1.Condition
			for _, ol := range g.Status.Listeners {
				if ol.Name == l.Name {
					old = ol.Conditions
				}
			}
			l.Conditions = w.merge(old, l.Conditions)
			st.Listeners = append(st.Listeners, l)
		}
		if apiequality.Semantic.DeepEqual(g.Status, st) {
			continue
		}
		g = g.DeepCopy()
		g.Status = st
		_, err := w.c.gw.GatewayV1().Gateways(g.Namespace).UpdateStatus(ctx, g, metav1.UpdateOptions{FieldManager: Name})
		errs = append(errs, ignoreGone(err))
	}
	for _, r := range in.Routes {
		want := w.routeParents(r, res.Routes[r.Namespace+"/"+r.Name])
		if apiequality.Semantic.DeepEqual(r.Status.Parents, want) {
			continue
		}
		r = r.DeepCopy()
		r.Status.Parents = want
		_, err := w.c.gw.GatewayV1().HTTPRoutes(r.Namespace).UpdateStatus(ctx, r, metav1.UpdateOptions{FieldManager: Name})
		errs = append(errs, ignoreGone(err))
	}
	return errors.Join(errs...)
}

// routeParents is the route's parents' status with orch's entries
// replaced by ours (other controllers' entries stay).
func (w *writer) routeParents(r *gwv1.HTTPRoute, ours []gwv1.RouteParentStatus) []gwv1.RouteParentStatus {
	out := []gwv1.RouteParentStatus{}
	for _, p := range r.Status.Parents {
		if p.ControllerName != gateway.ControllerName {
			out = append(out, p)
		}
	}
	for _, p := range ours {
		var old []metav1.Condition
		for _, o := range r.Status.Parents {
			if o.ControllerName == gateway.ControllerName && apiequality.Semantic.DeepEqual(o.ParentRef, p.ParentRef) {
				old = o.Conditions
			}
		}
		p.Conditions = w.merge(old, p.Conditions)
		out = append(out, p)
	}
	if len(out) == 0 && r.Status.Parents == nil {
		return nil
	}
	return out
}

// merge is want with each condition's lastTransitionTime kept from old
// when its status did not change, else now.
func (w *writer) merge(old, want []metav1.Condition) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(want))
	for _, c := range want {
		c.LastTransitionTime = metav1.NewTime(w.now.Truncate(time.Second))
		for _, o := range old {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	return out
}

// ignoreGone: an object deleted meanwhile needs no status (a conflict is
// retried: the queue runs sync again).
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func ptrTo[T any](v T) *T { return &v }
