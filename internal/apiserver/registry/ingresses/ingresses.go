// Package ingresses is the registry entry for networking.k8s.io/v1 ingresses.
package ingresses

import (
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"orch/internal/apiserver/registry"
)

// classAnnotation is the deprecated way of naming an ingress class.
const classAnnotation = "kubernetes.io/ingress.class"

// Resource returns the ingresses entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: networkingv1.SchemeGroupVersion,
		Resource:     "ingresses",
		Kind:         "Ingress",
		SingularName: "ingress",
		Namespaced:   true,
		ShortNames:   []string{"ing"},
		New:          func() runtime.Object { return &networkingv1.Ingress{} },
		NewList:      func() runtime.Object { return &networkingv1.IngressList{} },
		HasStatus:    true,
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*networkingv1.Ingress).Status = networkingv1.IngressStatus{}
		},
		Validate: validate,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Class", Type: "string", Description: "The name of the IngressClass resource that should be used for additional configuration"},
			{Name: "Hosts", Type: "string", Description: "Hosts that incoming requests are matched against before the ingress rule"},
			{Name: "Address", Type: "string", Description: "Address is a list containing ingress points for the load-balancer"},
			{Name: "Ports", Type: "string", Description: "Ports of TLS configurations that open"},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: row,
	}
}

func row(obj runtime.Object, now time.Time) []interface{} {
	ing := obj.(*networkingv1.Ingress)
	class := "<none>"
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	ports := "80"
	if len(ing.Spec.TLS) != 0 {
		ports = "80, 443"
	}
	return []interface{}{ing.Name, class, hosts(ing.Spec.Rules), address(ing.Status.LoadBalancer), ports, registry.Age(ing.CreationTimestamp, now)}
}

// hosts lists the hosts of the rules, "*" when none names one. Once three
// are listed the rest are counted as "+ N more...", N counting every rule
// past the third as upstream does.
func hosts(rules []networkingv1.IngressRule) string {
	const max = 3
	var list []string
	more := false
	for _, r := range rules {
		if len(list) == max {
			more = true
		}
		if !more && r.Host != "" {
			list = append(list, r.Host)
		}
	}
	if len(list) == 0 {
		return "*"
	}
	out := strings.Join(list, ",")
	if more {
		out = fmt.Sprintf("%s + %d more...", out, len(rules)-max)
	}
	return out
}

// address lists the load balancer's IPs (or hostnames), sorted.
func address(lb networkingv1.IngressLoadBalancerStatus) string {
	set := sets.New[string]()
	for _, in := range lb.Ingress {
		switch {
		case in.IP != "":
			set.Insert(in.IP)
		case in.Hostname != "":
			set.Insert(in.Hostname)
		}
	}
	list := set.UnsortedList()
	sort.Strings(list)
	return strings.Join(list, ",")
}

func isIP(s string) bool { return net.ParseIP(s) != nil }
