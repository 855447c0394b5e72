package pods

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// pullCredentials returns the credentials in pod's imagePullSecrets (of
// type kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg) that
// match image, in the order upstream's kubelet tries them (its
// credentialprovider keyring): registries in reverse lexical order, so
// that the longer path of a registry comes before its host, and the
// secrets in the pod's order for one registry. A registry matches when its
// host (with "*" globs per dot-separated part) and port are the image's
// and its path is a prefix of the image's repository; credentials for
// index.docker.io serve Docker Hub images when nothing else matched.
//
// missing names the secrets that could not be read: as upstream's, the
// pull goes on without them (the caller logs them). A secret whose
// content does not parse fails the lookup, as upstream's.
//
// Upstream also adds the node's own docker config files and credential
// provider plugins; orch has neither.
func pullCredentials(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, image string) (auths []*runtimeapi.AuthConfig, missing []string, err error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return nil, nil, fmt.Errorf("couldn't parse image name %q: %w", image, err)
	}
	var kr keyring
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue // validation once allowed it; upstream ignores it
		}
		secret, err := client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			missing = append(missing, ref.Name)
			continue
		}
		if err := kr.addSecret(secret); err != nil {
			return nil, missing, err
		}
	}
	return kr.lookup(named.Name()), missing, nil
}

// pullWithCredentials pulls with each of auths in turn until one succeeds,
// or once anonymously (nil auth) when there are none, as upstream's
// kuberuntime PullImage: with credentials, there is no anonymous attempt.
// It returns pull's image reference, or every attempt's error.
func pullWithCredentials(auths []*runtimeapi.AuthConfig, pull func(auth *runtimeapi.AuthConfig) (string, error)) (string, error) {
	if len(auths) == 0 {
		return pull(nil)
	}
	var errs []error
	for _, auth := range auths {
		ref, err := pull(auth)
		if err == nil {
			return ref, nil
		}
		errs = append(errs, err)
	}
	return "", utilerrors.NewAggregate(errs)
}

// keyring is upstream's BasicDockerKeyring: credentials by registry key
// (host, or host and path), and the keys in the order Lookup tries them.
type keyring struct {
	index []string
	creds map[string][]*runtimeapi.AuthConfig
}

// dockerConfigEntry is one registry's entry in a docker config: auth,
// when set, is base64 "username:password" and wins over the two fields.
type dockerConfigEntry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

// addSecret adds the registries of a docker config secret; secrets of
// other types, or without their config, are skipped, as upstream's.
func (k *keyring) addSecret(s *corev1.Secret) error {
	var cfg map[string]dockerConfigEntry
	switch {
	case s.Type == corev1.SecretTypeDockerConfigJson && len(s.Data[corev1.DockerConfigJsonKey]) > 0:
		var file struct {
			Auths map[string]dockerConfigEntry `json:"auths"`
		}
		if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &file); err != nil {
			return fmt.Errorf("image pull secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		cfg = file.Auths
	case s.Type == corev1.SecretTypeDockercfg && len(s.Data[corev1.DockerConfigKey]) > 0:
		// The older format: the "auths" map itself.
		if err := json.Unmarshal(s.Data[corev1.DockerConfigKey], &cfg); err != nil {
			return fmt.Errorf("image pull secret %s/%s: %w", s.Namespace, s.Name, err)
		}
	default:
		return nil
	}
	for registry, e := range cfg {
		if e.Auth != "" {
			user, pass, err := decodeAuth(e.Auth)
			if err != nil {
				return fmt.Errorf("image pull secret %s/%s, registry %q: %w", s.Namespace, s.Name, registry, err)
			}
			e.Username, e.Password = user, pass
		}
		key, ok := registryKey(registry)
		if !ok {
			continue // upstream logs and ignores it
		}
		if k.creds == nil {
			k.creds = map[string][]*runtimeapi.AuthConfig{}
		}
		if _, seen := k.creds[key]; !seen {
			k.index = append(k.index, key)
		}
		k.creds[key] = append(k.creds[key], &runtimeapi.AuthConfig{Username: e.Username, Password: e.Password})
	}
	// Reverse order: "quay.io/org" before "quay.io".
	slices.Sort(k.index)
	slices.Reverse(k.index)
	return nil
}

// decodeAuth decodes a docker config "auth" field, base64 of
// "username:password" (padded or not).
func decodeAuth(field string) (user, pass string, err error) {
	enc := base64.StdEncoding
	if !strings.HasSuffix(strings.TrimSpace(field), "=") {
		enc = base64.RawStdEncoding
	}
	decoded, err := enc.DecodeString(field)
	if err != nil {
		return "", "", err
	}
	user, pass, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return "", "", fmt.Errorf("unable to parse auth field, must be formatted as base64(username:password)")
	}
	return user, pass, nil
}

// registryKey is the keyring key of a docker config's registry entry: its
// host, and path when there is one, without scheme and without the
// /v1/ or /v2/ API prefix ("https://index.docker.io/v1/" is
// "index.docker.io").
func registryKey(registry string) (string, bool) {
	if !strings.HasPrefix(registry, "https://") && !strings.HasPrefix(registry, "http://") {
		registry = "https://" + registry
	}
	u, err := url.Parse(registry)
	if err != nil {
		return "", false
	}
	path := u.Path
	if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
		path = path[3:]
	}
	if path == "" || path == "/" {
		return u.Host, true
	}
	return u.Host + path, true
}

// lookup returns the credentials whose registries match repo (a
// normalized repository name without tag, e.g. docker.io/library/busybox).
func (k *keyring) lookup(repo string) []*runtimeapi.AuthConfig {
	var out []*runtimeapi.AuthConfig
	for _, key := range k.index {
		if registryMatches(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && isDockerHub(repo) {
		out = k.creds["index.docker.io"]
	}
	return out
}

// registryMatches is upstream's URLsMatch of a keyring key (the glob) and
// a repository: the same port, the same number of host parts each
// matching its glob part, and the key's path a prefix of the repository's.
func registryMatches(key, repo string) bool {
	glob, err1 := url.Parse("https://" + key)
	target, err2 := url.Parse("https://" + repo)
	if err1 != nil || err2 != nil {
		return false
	}
	globParts, globPort := splitHost(glob.Host)
	parts, port := splitHost(target.Host)
	if globPort != port || len(globParts) != len(parts) || !strings.HasPrefix(target.Path, glob.Path) {
		return false
	}
	for i, g := range globParts {
		if ok, err := filepath.Match(g, parts[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// splitHost splits host[:port] into its dot-separated parts and its port.
func splitHost(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// isDockerHub reports whether repo is pulled from Docker Hub: no registry
// host in its first part (no "." or ":"), or docker.io or index.docker.io.
func isDockerHub(repo string) bool {
	first, _, found := strings.Cut(repo, "/")
	switch {
	case first == "":
		return false
	case !found, first == "docker.io", first == "index.docker.io":
		return true
	}
	return !strings.ContainsAny(first, ".:")
}
