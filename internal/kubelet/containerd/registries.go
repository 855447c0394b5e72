package containerd

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"orch/internal/fsutil"
)

// Registries is a registries.yaml (--private-registry, default
// /etc/orch/registries.yaml), k3s's format:
//
//	mirrors:
//	  docker.io:                      # a registry as image names spell it; "*" for all
//	    endpoint: ["https://mirror.example.com:5000"]
//	configs:
//	  mirror.example.com:5000:        # a host (and port) that is spoken to
//	    auth: {username: u, password: p}
//	    tls: {ca_file: /etc/ssl/mirror-ca.pem, cert_file: …, key_file: …, insecure_skip_verify: false}
type Registries struct {
	Mirrors map[string]Mirror         `json:"mirrors"`
	Configs map[string]RegistryConfig `json:"configs"`
}

// Mirror lists the endpoints tried, in order, before the registry itself.
type Mirror struct {
	Endpoints []string          `json:"endpoint"`
	Rewrites  map[string]string `json:"rewrite"`
}

// RegistryConfig is how one host is spoken to.
type RegistryConfig struct {
	Auth *RegistryAuth `json:"auth"`
	TLS  *RegistryTLS  `json:"tls"`
}

// RegistryAuth are credentials sent to a host with Basic authentication.
type RegistryAuth struct {
	Username      string `json:"username"`
	Password      string `json:"password"`
	Auth          string `json:"auth"` // base64 of username:password
	IdentityToken string `json:"identity_token"`
}

// RegistryTLS is a host's certificate authority, client certificate and
// whether its certificate is checked at all.
type RegistryTLS struct {
	CAFile             string `json:"ca_file"`
	CertFile           string `json:"cert_file"`
	KeyFile            string `json:"key_file"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify"`
}

// ParseRegistries reads a registries.yaml strictly: an unknown key is an
// error, not a silently ignored setting.
func ParseRegistries(data []byte) (Registries, error) {
	var r Registries
	if err := yaml.UnmarshalStrict(data, &r); err != nil {
		return r, err
	}
	return r, nil
}

// hostsMarker starts every hosts.toml orch writes: files without it are
// the user's and are left alone.
const hostsMarker = "# Written by orch from its registries.yaml; replaced at every start.\n"

// HostsFiles turns r into containerd's hosts.toml files, by the directory
// name under certs.d (the registry as image names spell it; _default for
// "*"): each mirror's endpoints as [host] tables, in order, then the
// registry itself, with the TLS and credentials its configs give each
// host; a configured host no mirror names gets a file of its own. Only
// [host] tables are written: Debian's containerd 1.6 ignores the keys
// at the top of a hosts.toml.
func HostsFiles(r Registries) (map[string][]byte, error) {
	out := map[string][]byte{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(r.Mirrors)) {
		m := r.Mirrors[name]
		if len(m.Rewrites) > 0 {
			errs = append(errs, fmt.Errorf("mirrors[%q]: rewrite is not supported by orch", name))
			continue
		}
		var hosts []string
		for _, e := range m.Endpoints {
			u, err := endpointURL(e)
			if err != nil {
				errs = append(errs, fmt.Errorf("mirrors[%q].endpoint: %w", name, err))
				continue
			}
			hosts = append(hosts, u)
		}
		if name != "*" {
			hosts = append(hosts, defaultEndpoint(name))
		}
		data, err := hostsFile(slices.Compact(hosts), r.Configs)
		if err != nil {
			errs = append(errs, fmt.Errorf("mirrors[%q]: %w", name, err))
			continue
		}
		out[dirName(name)] = data
	}
	for _, host := range slices.Sorted(maps.Keys(r.Configs)) {
		if _, done := out[dirName(host)]; done {
			continue
		}
		if strings.Contains(host, "/") {
			errs = append(errs, fmt.Errorf("configs[%q]: a host, with its port if any, not a URL", host))
			continue
		}
		data, err := hostsFile([]string{defaultEndpoint(host)}, r.Configs)
		if err != nil {
			errs = append(errs, fmt.Errorf("configs[%q]: %w", host, err))
			continue
		}
		out[dirName(host)] = data
	}
	return out, errors.Join(errs...)
}

// hostsFile is one hosts.toml trying hosts (URLs) in order.
func hostsFile(hosts []string, configs map[string]RegistryConfig) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(hostsMarker)
	for _, h := range hosts {
		u, _ := url.Parse(h)
		fmt.Fprintf(&b, "\n[host.%s]\n  capabilities = [\"pull\", \"resolve\"]\n", strconv.Quote(h))
		cfg, ok := configs[u.Host]
		if !ok {
			continue
		}
		if t := cfg.TLS; t != nil {
			if t.CAFile != "" {
				fmt.Fprintf(&b, "  ca = %s\n", strconv.Quote(t.CAFile))
			}
			if (t.CertFile == "") != (t.KeyFile == "") {
				return nil, fmt.Errorf("configs[%q].tls: cert_file and key_file go together", u.Host)
			}
			if t.CertFile != "" {
				fmt.Fprintf(&b, "  client = [[%s, %s]]\n", strconv.Quote(t.CertFile), strconv.Quote(t.KeyFile))
			}
			if t.InsecureSkipVerify {
				b.WriteString("  skip_verify = true\n")
			}
		}
		if a := cfg.Auth; a != nil {
			basic, err := basicAuth(*a)
			if err != nil {
				return nil, fmt.Errorf("configs[%q].auth: %w", u.Host, err)
			}
			fmt.Fprintf(&b, "  [host.%s.header]\n    Authorization = %s\n", strconv.Quote(h), strconv.Quote("Basic "+basic))
		}
	}
	return b.Bytes(), nil
}

// basicAuth is base64 of user:password from a's username and password or
// its auth.
func basicAuth(a RegistryAuth) (string, error) {
	switch {
	case a.IdentityToken != "":
		return "", errors.New("identity_token is not supported by orch: give username and password, or auth")
	case a.Auth != "":
		dec, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil || !strings.Contains(string(dec), ":") {
			return "", errors.New("auth is not base64 of username:password")
		}
		return a.Auth, nil
	case a.Username != "":
		return base64.StdEncoding.EncodeToString([]byte(a.Username + ":" + a.Password)), nil
	}
	return "", errors.New("no username, password or auth")
}

// endpointURL is e as a URL with a scheme (https when it has none) and no
// path.
func endpointURL(e string) (string, error) {
	if !strings.Contains(e, "://") {
		e = "https://" + e
	}
	u, err := url.Parse(e)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("%q is not an http or https URL", e)
	}
	if strings.Trim(u.Path, "/") != "" {
		return "", fmt.Errorf("%q: a path is not supported by orch", e)
	}
	return u.Scheme + "://" + u.Host, nil
}

// defaultEndpoint is where a registry is reached without a mirror.
func defaultEndpoint(name string) string {
	if name == "docker.io" {
		return "https://registry-1.docker.io"
	}
	return "https://" + name
}

func dirName(registry string) string {
	if registry == "*" {
		return "_default"
	}
	return registry
}

// ApplyRegistries writes the hosts.toml files of the registries.yaml at
// path (none when it does not exist) under certsDir, and removes those
// orch wrote before that it no longer names. A hosts.toml of the user's
// (without orch's marker) is kept and wins; the log says so.
func ApplyRegistries(certsDir, path string, log *slog.Logger) error {
	want := map[string][]byte{}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("registries: %w", err)
	default:
		r, err := ParseRegistries(data)
		if err != nil {
			return fmt.Errorf("registries: %s: %w", path, err)
		}
		if want, err = HostsFiles(r); err != nil {
			return fmt.Errorf("registries: %s: %w", path, err)
		}
	}
	existing, _ := filepath.Glob(filepath.Join(certsDir, "*", "hosts.toml"))
	for _, f := range existing {
		dir := filepath.Base(filepath.Dir(f))
		old, err := os.ReadFile(f)
		if err != nil || !bytes.HasPrefix(old, []byte(hostsMarker)) {
			if _, named := want[dir]; named {
				log.Warn("registries.yaml names a registry that has a hosts.toml of its own: that file is kept", "file", f)
				delete(want, dir)
			}
			continue
		}
		if _, named := want[dir]; !named {
			if err := os.Remove(f); err != nil {
				return fmt.Errorf("registries: %w", err)
			}
		}
	}
	for dir, content := range want {
		if err := os.MkdirAll(filepath.Join(certsDir, dir), 0o755); err != nil {
			return fmt.Errorf("registries: %w", err)
		}
		// Credentials may be in it: readable by root only.
		if err := fsutil.WriteFileAtomic(filepath.Join(certsDir, dir, "hosts.toml"), content, 0o600); err != nil {
			return fmt.Errorf("registries: %w", err)
		}
	}
	return nil
}
