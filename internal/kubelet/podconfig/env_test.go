package podconfig

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func svc(ns, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func TestServiceEnvironment(t *testing.T) {
	services := []*corev1.Service{
		svc("default", "kubernetes", "10.43.0.1", corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}),
		svc("shop", "my-db", "10.43.0.20", corev1.ServicePort{Port: 5432}, corev1.ServicePort{Name: "metrics-port", Port: 9187, Protocol: corev1.ProtocolUDP}),
		svc("shop", "headless", "None", corev1.ServicePort{Port: 80}),
		svc("shop", "external", "", corev1.ServicePort{Port: 80}),
		svc("other", "elsewhere", "10.43.0.30", corev1.ServicePort{Port: 80}),
		svc("shop", "v6", "fd00::10", corev1.ServicePort{Port: 80}),
	}
	kubernetes := map[string]string{
		"KUBERNETES_SERVICE_HOST":       "10.43.0.1",
		"KUBERNETES_SERVICE_PORT":       "443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT":               "tcp://10.43.0.1:443",
		"KUBERNETES_PORT_443_TCP":       "tcp://10.43.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_443_TCP_PORT":  "443",
		"KUBERNETES_PORT_443_TCP_ADDR":  "10.43.0.1",
	}
	t.Run("service links off: only kubernetes", func(t *testing.T) {
		if got := ServiceEnvironment(services, "shop", false); !reflect.DeepEqual(got, kubernetes) {
			t.Errorf("got %v", got)
		}
	})
	t.Run("service links on", func(t *testing.T) {
		got := ServiceEnvironment(services, "shop", true)
		want := map[string]string{
			"MY_DB_SERVICE_HOST":              "10.43.0.20",
			"MY_DB_SERVICE_PORT":              "5432",
			"MY_DB_SERVICE_PORT_METRICS_PORT": "9187",
			"MY_DB_PORT":                      "tcp://10.43.0.20:5432",
			"MY_DB_PORT_5432_TCP":             "tcp://10.43.0.20:5432",
			"MY_DB_PORT_5432_TCP_PROTO":       "tcp",
			"MY_DB_PORT_5432_TCP_PORT":        "5432",
			"MY_DB_PORT_5432_TCP_ADDR":        "10.43.0.20",
			"MY_DB_PORT_9187_UDP":             "udp://10.43.0.20:9187",
			"MY_DB_PORT_9187_UDP_PROTO":       "udp",
			"MY_DB_PORT_9187_UDP_PORT":        "9187",
			"MY_DB_PORT_9187_UDP_ADDR":        "10.43.0.20",
			"V6_SERVICE_HOST":                 "fd00::10",
			"V6_SERVICE_PORT":                 "80",
			"V6_PORT":                         "tcp://[fd00::10]:80",
			"V6_PORT_80_TCP":                  "tcp://[fd00::10]:80",
			"V6_PORT_80_TCP_PROTO":            "tcp",
			"V6_PORT_80_TCP_PORT":             "80",
			"V6_PORT_80_TCP_ADDR":             "fd00::10",
		}
		for k, v := range kubernetes {
			want[k] = v
		}
		if !reflect.DeepEqual(got, want) {
			for k := range want {
				if got[k] != want[k] {
					t.Errorf("%s = %q, want %q", k, got[k], want[k])
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("unexpected %s = %q", k, got[k])
				}
			}
		}
	})
	t.Run("a kubernetes service in the pod's namespace wins over default's", func(t *testing.T) {
		got := ServiceEnvironment([]*corev1.Service{services[0], svc("shop", "kubernetes", "10.43.0.99", corev1.ServicePort{Port: 443})}, "shop", true)
		if got["KUBERNETES_SERVICE_HOST"] != "10.43.0.99" {
			t.Errorf("KUBERNETES_SERVICE_HOST = %q", got["KUBERNETES_SERVICE_HOST"])
		}
	})
}

func TestEnvironment(t *testing.T) {
	src := func() *fakeSource {
		return &fakeSource{
			configMaps: map[string]*corev1.ConfigMap{
				"shop/cfg":  {Data: map[string]string{"MODE": "prod", "LEVEL": "3", "weird key.x": "w"}},
				"shop/more": {Data: map[string]string{"MODE": "dev"}},
			},
			secrets: map[string]*corev1.Secret{
				"shop/creds": {Data: map[string][]byte{"password": []byte("s3cret"), "USER": []byte("bob")}},
			},
			services: []*corev1.Service{svc("default", "kubernetes", "10.43.0.1", corev1.ServicePort{Port: 443})},
		}
	}
	cmKey := func(name, key string, optional bool) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}
	}
	secretKey := func(name, key string, optional bool) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}
	}
	cmRef := func(name, prefix string, optional bool) corev1.EnvFromSource {
		return corev1.EnvFromSource{Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Optional: &optional}}
	}
	for _, tc := range []struct {
		name    string
		env     []corev1.EnvVar
		envFrom []corev1.EnvFromSource
		noLinks bool // spec.enableServiceLinks left unset
		src     *fakeSource
		want    map[string]string // checked keys (nil: checked below)
		absent  []string
		wantErr string
	}{
		{name: "values and references to earlier vars", env: []corev1.EnvVar{
			{Name: "A", Value: "a"},
			{Name: "B", Value: "$(A)-b"},
			{Name: "C", Value: "$(LATER)$$(A)$(KUBERNETES_SERVICE_HOST)"},
			{Name: "LATER", Value: "late"},
			{Name: "EMPTY"},
		}, want: map[string]string{"A": "a", "B": "a-b", "C": "$(LATER)$(A)10.43.0.1", "LATER": "late", "EMPTY": ""}},
		{name: "envFrom with prefix, later sources and env win", envFrom: []corev1.EnvFromSource{
			cmRef("cfg", "", false), cmRef("more", "", false), cmRef("cfg", "CFG_", false),
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
		}, env: []corev1.EnvVar{{Name: "LEVEL", Value: "override-$(LEVEL)"}},
			want: map[string]string{"MODE": "dev", "LEVEL": "override-3", "CFG_MODE": "prod", "CFG_LEVEL": "3",
				"weird key.x": "w", "CFG_weird key.x": "w", "password": "s3cret", "USER": "bob"}},
		{name: "optional missing configMap in envFrom", envFrom: []corev1.EnvFromSource{cmRef("nope", "", true)},
			want: map[string]string{"KUBERNETES_SERVICE_HOST": "10.43.0.1"}},
		{name: "required missing configMap in envFrom", envFrom: []corev1.EnvFromSource{cmRef("nope", "", false)}, wantErr: "nope"},
		{name: "configMap and secret keys", env: []corev1.EnvVar{
			{Name: "MODE", ValueFrom: cmKey("cfg", "MODE", false)},
			{Name: "PW", ValueFrom: secretKey("creds", "password", false)},
			{Name: "OPT_KEY", ValueFrom: cmKey("cfg", "missing", true)},
			{Name: "OPT_CM", ValueFrom: cmKey("nope", "x", true)},
			{Name: "OPT_SECRET_KEY", ValueFrom: secretKey("creds", "missing", true)},
			{Name: "OPT_SECRET", ValueFrom: secretKey("nope", "x", true)},
		}, want: map[string]string{"MODE": "prod", "PW": "s3cret"}, absent: []string{"OPT_KEY", "OPT_CM", "OPT_SECRET_KEY", "OPT_SECRET"}},
		{name: "required missing configMap key", env: []corev1.EnvVar{{Name: "X", ValueFrom: cmKey("cfg", "missing", false)}},
			wantErr: "couldn't find key missing in ConfigMap shop/cfg"},
		{name: "required missing secret key", env: []corev1.EnvVar{{Name: "X", ValueFrom: secretKey("creds", "missing", false)}},
			wantErr: "couldn't find key missing in Secret shop/creds"},
		{name: "required missing secret", env: []corev1.EnvVar{{Name: "X", ValueFrom: secretKey("nope", "k", false)}}, wantErr: "nope"},
		{name: "optional but the lookup failed otherwise", env: []corev1.EnvVar{{Name: "X", ValueFrom: cmKey("cfg", "MODE", true)}},
			src: &fakeSource{err: errors.New("apiserver down")}, wantErr: "apiserver down"},
		{name: "field and resource refs", env: []corev1.EnvVar{
			{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
			{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
			{Name: "REF", Value: "$(NODE)/$(POD_IP)"},
		}, want: map[string]string{"NODE": "node-1", "POD_IP": "10.42.0.7", "MEM": "4294967296", "REF": "node-1/10.42.0.7"}},
		{name: "bad field path", env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.phase"}}}},
			wantErr: "unsupported fieldPath"},
		{name: "fileKeyRef is refused", env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k"}}}},
			wantErr: "fileKeyRef: not supported by orch"},
		{name: "env overrides a service variable", env: []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "mine"}},
			want: map[string]string{"KUBERNETES_SERVICE_HOST": "mine", "KUBERNETES_SERVICE_PORT": "443"}},
		{name: "enableServiceLinks unset", noLinks: true, wantErr: "enableServiceLinks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.Containers[0].Env = tc.env
			pod.Spec.Containers[0].EnvFrom = tc.envFrom
			if tc.noLinks {
				pod.Spec.EnableServiceLinks = nil
			}
			s := tc.src
			if s == nil {
				s = src()
			}
			got, err := Environment(pod, &pod.Spec.Containers[0], testNode(), []string{"10.42.0.7", "fd00:42::7"}, s)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := map[string]string{}
			for i, e := range got {
				if i > 0 && got[i-1].Name >= e.Name {
					t.Errorf("not sorted: %q before %q", got[i-1].Name, e.Name)
				}
				m[e.Name] = e.Value
			}
			for k, v := range tc.want {
				if gv, ok := m[k]; !ok || gv != v {
					t.Errorf("%s = %q (present %v), want %q", k, gv, ok, v)
				}
			}
			for _, k := range tc.absent {
				if _, ok := m[k]; ok {
					t.Errorf("%s present, want absent", k)
				}
			}
		})
	}
}

// apiNotFoundSource answers every lookup with a Kubernetes NotFound error.
type apiNotFoundSource struct{ fakeSource }

func (apiNotFoundSource) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func TestEnvironmentAPINotFound(t *testing.T) {
	pod := testPod()
	opt := true
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Key: "k", Optional: &opt}}}}
	got, err := Environment(pod, &pod.Spec.Containers[0], testNode(), nil, &apiNotFoundSource{})
	if err != nil || len(got) != 0 {
		t.Errorf("got %v, %v; want nothing and no error", got, err)
	}
}

func TestEnvironmentCachesObjects(t *testing.T) {
	pod := testPod()
	f := &fakeSource{configMaps: map[string]*corev1.ConfigMap{"shop/cfg": {Data: map[string]string{"A": "1", "B": "2"}}}}
	ref := func(k string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: k}}
	}
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: ref("A")}, {Name: "B", ValueFrom: ref("B")}}
	pod.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
	if _, err := Environment(pod, &pod.Spec.Containers[0], testNode(), nil, f); err != nil {
		t.Fatal(err)
	}
	if f.calls != 1 {
		t.Errorf("ConfigMap looked up %d times, want 1 (one consistent view per container)", f.calls)
	}
}
