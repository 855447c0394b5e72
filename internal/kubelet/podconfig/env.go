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

	configMaps := cachedData(func(name string) (map[string]string, error) {
		cm, err := src.ConfigMap(pod.Namespace, name)
		if err != nil {
			return nil, err
		}
		return cm.Data, nil
	})
	secrets := cachedData(func(name string) (map[string]string, error) {
		s, err := src.Secret(pod.Namespace, name)
		if err != nil {
			return nil, err
		}
		data := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			data[k] = string(v)
		}
		return data, nil
	})

	env := map[string]string{}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			data, err := configMaps(from.ConfigMapRef.Name)
			if err != nil {
				if isNotFound(err) && isTrue(from.ConfigMapRef.Optional) {
					continue
				}
				return nil, fmt.Errorf("configMap %s/%s for envFrom: %w", pod.Namespace, from.ConfigMapRef.Name, err)
			}
			for k, v := range data {
				env[from.Prefix+k] = v
			}
		case from.SecretRef != nil:
			data, err := secrets(from.SecretRef.Name)
			if err != nil {
				if isNotFound(err) && isTrue(from.SecretRef.Optional) {
					continue
				}
				return nil, fmt.Errorf("secret %s/%s for envFrom: %w", pod.Namespace, from.SecretRef.Name, err)
			}
			for k, v := range data {
				env[from.Prefix+k] = v
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
		case from.ConfigMapKeyRef != nil, from.SecretKeyRef != nil:
			get, kind, ref := configMaps, "ConfigMap", keyRef{}
			if r := from.ConfigMapKeyRef; r != nil {
				ref = keyRef{r.Name, r.Key, r.Optional}
			} else {
				r := from.SecretKeyRef
				get, kind, ref = secrets, "Secret", keyRef{r.Name, r.Key, r.Optional}
			}
			var ok bool
			if value, ok, err = keyValue(get, kind, pod.Namespace, ref); err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			if !ok {
				continue
			}
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

// cachedData wraps get, which returns the data of a ConfigMap or Secret by
// name, so that each object is fetched once (failures are not kept).
func cachedData(get func(name string) (map[string]string, error)) func(name string) (map[string]string, error) {
	cache := map[string]map[string]string{}
	return func(name string) (map[string]string, error) {
		if data, ok := cache[name]; ok {
			return data, nil
		}
		data, err := get(name)
		if err != nil {
			return nil, err
		}
		cache[name] = data
		return data, nil
	}
}

// keyRef is what a configMapKeyRef and a secretKeyRef have in common.
type keyRef struct {
	Name, Key string
	Optional  *bool
}

// keyValue is the value of ref's key in the ConfigMap or Secret (kind) of
// namespace whose data get returns. ok is false without an error when an
// optional reference's object or key is missing: the variable is left out.
func keyValue(get func(name string) (map[string]string, error), kind, namespace string, ref keyRef) (value string, ok bool, err error) {
	data, err := get(ref.Name)
	if err != nil {
		if isNotFound(err) && isTrue(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("%s %s/%s: %w", strings.ToLower(kind[:1])+kind[1:], namespace, ref.Name, err)
	}
	value, ok = data[ref.Key]
	if !ok && !isTrue(ref.Optional) {
		return "", false, fmt.Errorf("couldn't find key %s in %s %s/%s", ref.Key, kind, namespace, ref.Name)
	}
	return value, ok, nil
}

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
