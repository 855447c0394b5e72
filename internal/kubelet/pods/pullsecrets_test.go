package pods

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// dockerConfigJSONSecret is a kubernetes.io/dockerconfigjson secret whose
// auths map registry to "user:password" each.
func dockerConfigJSONSecret(name string, auths map[string]string) *corev1.Secret {
	entries := []string{}
	for registry, userPass := range auths {
		user, pass, _ := strings.Cut(userPass, ":")
		entries = append(entries, fmt.Sprintf("%q: {\"username\": %q, \"password\": %q}", registry, user, pass))
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {` + strings.Join(entries, ", ") + `}}`)},
	}
}

// pullSecretPod is a pod in namespace default with imagePullSecrets names.
func pullSecretPod(names ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}}
	for _, n := range names {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
	}
	return pod
}

// users are the usernames of auths, in order.
func users(auths []*runtimeapi.AuthConfig) []string {
	out := []string{}
	for _, a := range auths {
		out = append(out, a.Username)
	}
	return out
}

// TestPullCredentialsMatching checks which registries of a secret match
// an image, and in which order, as upstream's keyring.
func TestPullCredentialsMatching(t *testing.T) {
	client := fake.NewClientset(dockerConfigJSONSecret("regcred", map[string]string{
		"registry.example.com":                   "host:p",
		"https://registry.example.com/v2/":       "host2:p", // the same key as the host
		"registry.example.com/team":              "team:p",
		"registry.example.com/team/app":          "app:p",
		"registry.example.com:5000":              "port:p",
		"*.mirror.example.com":                   "glob:p",
		"http://127.0.0.1:5000":                  "local:p",
		"https://index.docker.io/v1/":            "hub:p",
		"other.example.com":                      "other:p",
		"registry.example.com/teamless/app/deep": "deep:p",
	}))
	for _, tc := range []struct {
		image string
		want  []string
	}{
		// Most specific path first, then the host; the two entries
		// for the host itself in the order of the secret's map, which
		// is random: checked apart below.
		{"registry.example.com/team/app:1", []string{"app", "team", "host*", "host*"}},
		{"registry.example.com/team/other", []string{"team", "host*", "host*"}},
		// A path prefix is a string prefix, as upstream's.
		{"registry.example.com/teamless/app", []string{"team", "host*", "host*"}},
		{"registry.example.com:5000/team/app", []string{"port"}},
		{"registry.example.com:5001/team/app", []string{}},
		{"eu.mirror.example.com/app@sha256:" + strings.Repeat("a", 64), []string{"glob"}},
		{"a.eu.mirror.example.com/app", []string{}},
		{"127.0.0.1:5000/test/busybox:1", []string{"local"}},
		{"127.0.0.1/test/busybox:1", []string{}},
		{"busybox", []string{"hub"}},
		{"library/busybox:1", []string{"hub"}},
		{"docker.io/library/busybox", []string{"hub"}},
		{"quay.io/app", []string{}},
	} {
		auths, missing, err := pullCredentials(context.Background(), client, pullSecretPod("regcred"), tc.image)
		if err != nil || len(missing) != 0 {
			t.Fatalf("%s: missing %v, err %v", tc.image, missing, err)
		}
		got := users(auths)
		for i, u := range got {
			if strings.HasPrefix(u, "host") {
				got[i] = "host*"
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: credentials %v, want %v", tc.image, got, tc.want)
		}
		for _, a := range auths {
			if a.Password != "p" {
				t.Errorf("%s: %s has password %q", tc.image, a.Username, a.Password)
			}
		}
	}
}

// TestPullCredentialsSecrets covers the secret types and formats, the
// order across secrets, and secrets that are missing or broken.
func TestPullCredentialsSecrets(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("authuser:pa:ss"))
	rawAuth := base64.RawStdEncoding.EncodeToString([]byte("raw:pw"))
	dockercfg := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "old"},
		Type:       corev1.SecretTypeDockercfg,
		Data:       map[string][]byte{corev1.DockerConfigKey: []byte(`{"reg.example.com": {"auth": "` + auth + `", "email": "a@b.c"}}`)},
	}
	withAuth := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "raw"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {"reg.example.com": {"username": "ignored", "auth": "` + rawAuth + `"}}}`)},
	}
	opaque := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "opaque"},
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {"reg.example.com": {"username": "opaque"}}}`)},
	}
	wrongKey := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "wrongkey"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigKey: []byte(`{"reg.example.com": {"username": "wrongkey"}}`)},
	}
	otherNS := dockerConfigJSONSecret("elsewhere", map[string]string{"reg.example.com": "elsewhere:p"})
	otherNS.Namespace = "other"
	first := dockerConfigJSONSecret("first", map[string]string{"reg.example.com": "first:p"})
	client := fake.NewClientset(dockercfg, withAuth, opaque, wrongKey, otherNS, first)

	pod := pullSecretPod("first", "gone", "old", "", "opaque", "wrongkey", "elsewhere", "raw")
	auths, missing, err := pullCredentials(context.Background(), client, pod, "reg.example.com/app:1")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"gone", "elsewhere"}; !slices.Equal(missing, want) {
		t.Errorf("missing %v, want %v", missing, want)
	}
	got := []string{}
	for _, a := range auths {
		got = append(got, a.Username+":"+a.Password)
	}
	// One registry: the secrets' order.
	if want := []string{"first:p", "authuser:pa:ss", "raw:pw"}; !slices.Equal(got, want) {
		t.Errorf("credentials %v, want %v", got, want)
	}

	// No pull secrets: nothing, and nothing read.
	client.ClearActions()
	auths, missing, err = pullCredentials(context.Background(), client, pullSecretPod(), "reg.example.com/app:1")
	if err != nil || len(auths) != 0 || len(missing) != 0 || len(client.Actions()) != 0 {
		t.Errorf("no pull secrets: %v %v %v, actions %v", auths, missing, err, client.Actions())
	}

	// A secret that does not parse fails the lookup, as upstream's.
	for name, data := range map[string]string{
		"badjson": `{"auths": [}`,
		"badauth": `{"auths": {"reg.example.com": {"auth": "!!!"}}}`,
		"nocolon": `{"auths": {"reg.example.com": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("nocolon")) + `"}}}`,
	} {
		bad := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(data)},
		}
		client := fake.NewClientset(bad)
		if _, _, err := pullCredentials(context.Background(), client, pullSecretPod(name), "reg.example.com/app"); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err %v, want one naming the secret", name, err)
		}
	}

	// An image that does not parse.
	if _, _, err := pullCredentials(context.Background(), client, pod, "Reg.example.com/UPPER"); err == nil {
		t.Error("an invalid image name: no error")
	}
}

// TestPullWithCredentials checks the attempts: anonymous only without
// credentials, else each credential in turn until one works.
func TestPullWithCredentials(t *testing.T) {
	var tried []string
	pull := func(works string) func(*runtimeapi.AuthConfig) (string, error) {
		return func(auth *runtimeapi.AuthConfig) (string, error) {
			who := "anonymous"
			if auth != nil {
				who = auth.Username
			}
			tried = append(tried, who)
			if who == works {
				return "sha256:image", nil
			}
			return "", errors.New(who + " denied")
		}
	}
	a, b := &runtimeapi.AuthConfig{Username: "a"}, &runtimeapi.AuthConfig{Username: "b"}
	for _, tc := range []struct {
		auths   []*runtimeapi.AuthConfig
		works   string
		tried   []string
		wantErr string
	}{
		{nil, "anonymous", []string{"anonymous"}, ""},
		{nil, "", []string{"anonymous"}, "anonymous denied"},
		{[]*runtimeapi.AuthConfig{a, b}, "a", []string{"a"}, ""},
		{[]*runtimeapi.AuthConfig{a, b}, "b", []string{"a", "b"}, ""},
		{[]*runtimeapi.AuthConfig{a}, "anonymous", []string{"a"}, "a denied"},
		{[]*runtimeapi.AuthConfig{a, b}, "", []string{"a", "b"}, "[a denied, b denied]"},
	} {
		tried = nil
		ref, err := pullWithCredentials(tc.auths, pull(tc.works))
		if !slices.Equal(tried, tc.tried) {
			t.Errorf("%v, %s works: tried %v, want %v", users(tc.auths), tc.works, tried, tc.tried)
		}
		switch {
		case tc.wantErr == "" && (err != nil || ref != "sha256:image"):
			t.Errorf("%v, %s works: %q, %v", users(tc.auths), tc.works, ref, err)
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("%v, %s works: err %v, want %s", users(tc.auths), tc.works, err, tc.wantErr)
		}
	}
}
