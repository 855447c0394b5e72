package podconfig

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// EnvSource hands over the objects a container's environment refers to.
// ConfigMap and Secret return an error wrapping ErrNotFound (or a
// Kubernetes NotFound error) when the object does not exist.
type EnvSource interface {
	ConfigMap(namespace, name string) (*corev1.ConfigMap, error)
	Secret(namespace, name string) (*corev1.Secret, error)
	// Services lists the Services of all namespaces (the kubelet picks the
	// pod's namespace and the kubernetes Service of default).
	Services() ([]*corev1.Service, error)
}

// EnvVar is one variable of a container's environment.
type EnvVar struct{ Name, Value string }

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) || apierrors.IsNotFound(err) }

// Environment is the container's environment as the kubelet makes it:
// envFrom first (later sources win, with their prefix), then env in order
// ($(VAR) in a value expands to an earlier variable or a service
// variable; valueFrom resolves field, resource, ConfigMap and Secret
// references, optional ones skipped when missing), then the service
// variables no other variable has claimed. The result is sorted by name.
// Keys of envFrom are taken as they are, as upstream 1.37 does (the API
// accepts any printable name). fileKeyRef is refused with ErrUnsupported.
func Environment(pod *corev1.Pod, c *corev1.Container, node Node, podIPs []string, src EnvSource) ([]EnvVar, error) {
	if pod.Spec.EnableServiceLinks == nil {
		return nil, Invalidf("pod %s/%s has no spec.enableServiceLinks (the API server defaults it)", pod.Namespace, pod.Name)
	}
	services, err := src.Services()
	if err != nil {
		return nil, fmt.Errorf("list services for the environment of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	serviceEnv := ServiceEnvironment(services, pod.Namespace, *pod.Spec.EnableServiceLinks)

	configMaps := map[string]*corev1.ConfigMap{}
	secrets := map[string]*corev1.Secret{}
	getConfigMap := func(name string) (*corev1.ConfigMap, error) {
		if cm, ok := configMaps[name]; ok {
			return cm, nil
		}
		cm, err := src.ConfigMap(pod.Namespace, name)
		if err != nil {
			return nil, err
		}
		configMaps[name] = cm
		return cm, nil
	}
	getSecret := func(name string) (*corev1.Secret, error) {
		if s, ok := secrets[name]; ok {
			return s, nil
		}
		s, err := src.Secret(pod.Namespace, name)
		if err != nil {
			return nil, err
		}
		secrets[name] = s
		return s, nil
	}

	env := map[string]string{}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, err := getConfigMap(from.ConfigMapRef.Name)
			if err != nil {
				if isNotFound(err) && isTrue(from.ConfigMapRef.Optional) {
					continue
				}
				return nil, fmt.Errorf("configMap %s/%s for envFrom: %w", pod.Namespace, from.ConfigMapRef.Name, err)
			}
			for k, v := range cm.Data {
				env[from.Prefix+k] = v
			}
		case from.SecretRef != nil:
			s, err := getSecret(from.SecretRef.Name)
			if err != nil {
				if isNotFound(err) && isTrue(from.SecretRef.Optional) {
					continue
				}
				return nil, fmt.Errorf("secret %s/%s for envFrom: %w", pod.Namespace, from.SecretRef.Name, err)
			}
			for k, v := range s.Data {
				env[from.Prefix+k] = string(v)
			}
		}
	}

	lookup := lookupIn(env, serviceEnv)
	for _, e := range c.Env {
		value := e.Value
		switch from := e.ValueFrom; {
		case value != "":
			value = Expand(value, lookup)
		case from == nil:
		case from.FieldRef != nil:
			if value, err = FieldRefValue(pod, from.FieldRef, node.HostIPs, podIPs); err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		case from.ResourceFieldRef != nil:
			if value, err = ResourceFieldRefValue(pod, c, from.ResourceFieldRef, node.Allocatable); err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		case from.ConfigMapKeyRef != nil:
			ref := from.ConfigMapKeyRef
			cm, err := getConfigMap(ref.Name)
			if err != nil {
				if isNotFound(err) && isTrue(ref.Optional) {
					continue
				}
				return nil, fmt.Errorf("env %s: configMap %s/%s: %w", e.Name, pod.Namespace, ref.Name, err)
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				if isTrue(ref.Optional) {
					continue
				}
				return nil, fmt.Errorf("env %s: couldn't find key %s in ConfigMap %s/%s", e.Name, ref.Key, pod.Namespace, ref.Name)
			}
			value = v
		case from.SecretKeyRef != nil:
			ref := from.SecretKeyRef
			s, err := getSecret(ref.Name)
			if err != nil {
				if isNotFound(err) && isTrue(ref.Optional) {
					continue
				}
				return nil, fmt.Errorf("env %s: secret %s/%s: %w", e.Name, pod.Namespace, ref.Name, err)
			}
			v, ok := s.Data[ref.Key]
			if !ok {
				if isTrue(ref.Optional) {
					continue
				}
				return nil, fmt.Errorf("env %s: couldn't find key %s in Secret %s/%s", e.Name, ref.Key, pod.Namespace, ref.Name)
			}
			value = string(v)
		case from.FileKeyRef != nil:
			return nil, fmt.Errorf("env %s: fileKeyRef: %w", e.Name, ErrUnsupported)
		}
		env[e.Name] = value
	}
	for k, v := range serviceEnv {
		if _, ok := env[k]; !ok {
			env[k] = v
		}
	}
	out := make([]EnvVar, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, EnvVar{Name: k, Value: env[k]})
	}
	return out, nil
}

func isTrue(b *bool) bool { return b != nil && *b }

// ServiceEnvironment are the docker-link style variables of the Services
// a pod in namespace sees: the kubernetes Service of default always, and
// with enableServiceLinks every Service of the pod's own namespace with a
// cluster IP (not headless, not ExternalName).
func ServiceEnvironment(services []*corev1.Service, namespace string, enableServiceLinks bool) map[string]string {
	picked := map[string]*corev1.Service{}
	for _, s := range services {
		if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone {
			continue
		}
		switch {
		case s.Namespace == "default" && s.Name == "kubernetes":
			if _, ok := picked[s.Name]; !ok {
				picked[s.Name] = s
			}
		case s.Namespace == namespace && enableServiceLinks:
			picked[s.Name] = s
		}
	}
	env := map[string]string{}
	for _, s := range picked {
		for _, e := range serviceVars(s) {
			env[e.Name] = e.Value
		}
	}
	return env
}

// serviceVars are one Service's variables: <NAME>_SERVICE_HOST,
// <NAME>_SERVICE_PORT[_<PORT NAME>], and <NAME>_PORT[_<port>_<PROTO>[_PROTO|_PORT|_ADDR]].
func serviceVars(s *corev1.Service) []EnvVar {
	if len(s.Spec.Ports) == 0 {
		return nil
	}
	prefix := envName(s.Name)
	ip := s.Spec.ClusterIP
	vars := []EnvVar{
		{prefix + "_SERVICE_HOST", ip},
		{prefix + "_SERVICE_PORT", strconv.Itoa(int(s.Spec.Ports[0].Port))},
	}
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			vars = append(vars, EnvVar{prefix + "_SERVICE_PORT_" + envName(p.Name), strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range s.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(corev1.ProtocolTCP)
		}
		port := strconv.Itoa(int(p.Port))
		url := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			vars = append(vars, EnvVar{prefix + "_PORT", url})
		}
		pp := prefix + "_PORT_" + port + "_" + strings.ToUpper(proto)
		vars = append(vars,
			EnvVar{pp, url},
			EnvVar{pp + "_PROTO", strings.ToLower(proto)},
			EnvVar{pp + "_PORT", port},
			EnvVar{pp + "_ADDR", ip})
	}
	return vars
}

func envName(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }
